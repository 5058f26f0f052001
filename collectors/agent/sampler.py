"""One node's sample: every GPU (fast, and slow on slow ticks), every port and NIC."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pynvml

from collectors.agent import wire
from collectors.agent.fields import GPU_SLOW_FIELDS
from collectors.agent.gpus import Gpu, GpuLost
from collectors.agent.nvmlcall import error_name, is_gpu_lost
from collectors.agent.renter import RenterIdentity, gpu_usage
from collectors.agent.sysfs import IbPort, Nic

Errors = Dict[str, Dict[str, str]]
USAGE_FIELDS = ("foreign_mem_mib", "foreign_procs", "renter_procs")
_USAGE_AT = [GPU_SLOW_FIELDS.index(name) for name in USAGE_FIELDS]


class NodeSampler:
    """Builds ``sample`` messages from the node's GPUs, HCA ports and NICs."""

    def __init__(
        self,
        gpus: List[Gpu],
        ports: List[IbPort],
        nics: List[Nic],
        renter: Optional[RenterIdentity] = None,
        proc_root: str = "/proc",
    ) -> None:
        self.gpus = gpus
        self.renter = renter if renter else None  # no identity: the fields stay null
        self.proc_root = proc_root
        self.ports = ports
        self.nics = nics
        # GPUs lost since the last call, for the caller to announce once.
        self.newly_lost: List[Gpu] = []

    def unsupported(self) -> Dict[str, List[str]]:
        """Fields each GPU cannot report at all, for hello (by GPU index)."""
        return {str(g.index): list(g.unsupported) for g in self.gpus if g.unsupported}

    def sample(self, t: float, seq: int, slow: bool) -> wire.Message:
        """One ``sample`` message; on slow ticks with ``slow``, ``links`` and ``hw``."""
        errs: Errors = {}
        rows = [self._fast_row(gpu, slow, errs) for gpu in self.gpus]
        lost = [gpu.index for gpu in self.gpus if gpu.lost]
        extra = self._slow_part(errs) if slow else None
        ports = [port.read() for port in self.ports]
        nics = [nic.read() for nic in self.nics]
        return wire.sample(t, seq, rows, ports, nics, lost, errs, extra)

    def _fast_row(self, gpu: Gpu, slow: bool, errs: Errors) -> Optional[List[Any]]:
        # A lost GPU is retried on slow ticks only: every call on it fails anyway.
        if gpu.lost and (not slow or gpu.handle is None):
            return None
        try:
            values, failed = gpu.read_fast()
        except GpuLost:
            if not gpu.lost:
                gpu.lost = True
                self.newly_lost.append(gpu)
            return None
        gpu.lost = False
        if failed:
            errs.setdefault(str(gpu.index), {}).update(failed)
        return values

    def _slow_part(self, errs: Errors) -> Dict[str, Any]:
        slow_rows: List[Optional[List[Any]]] = []
        links: List[Optional[List[List[Any]]]] = []
        for gpu in self.gpus:
            row, gpu_links = self._slow_row(gpu, errs)
            slow_rows.append(row)
            links.append(gpu_links)
        hw = [port.read_hw() for port in self.ports]
        return {"slow": slow_rows, "links": links, "hw": hw}

    def _slow_row(
        self, gpu: Gpu, errs: Errors
    ) -> Tuple[Optional[List[Any]], Optional[List[List[Any]]]]:
        if gpu.lost:
            return None, None
        try:
            row, links, failed = gpu.read_slow()
            if self.renter is not None and row is not None:
                self._add_usage(gpu, row, errs)
        except GpuLost:
            gpu.lost = True
            self.newly_lost.append(gpu)
            return None, None
        if failed:
            errs.setdefault(str(gpu.index), {}).update(failed)
        return row, links

    def _add_usage(self, gpu: Gpu, row: List[Any], errs: Errors) -> None:
        try:
            usage = gpu_usage(gpu.handle, self.proc_root, self.renter)  # type: ignore[arg-type]
        except pynvml.NVMLError as exc:
            if is_gpu_lost(exc):
                raise GpuLost(gpu.index) from exc
            errs.setdefault(str(gpu.index), {}).update(
                {name: error_name(exc) for name in USAGE_FIELDS}
            )
            return
        for at, value in zip(_USAGE_AT, usage):
            row[at] = value

    def take_newly_lost(self) -> List[Gpu]:
        """GPUs lost since the last call (each reported once)."""
        lost, self.newly_lost = self.newly_lost, []
        return lost
