"""The node's GPUs: handles opened once, static facts for hello, fast and slow reads.

A GPU that raises NVMLError_GpuIsLost is marked lost (its sample entry is null)
while the others keep streaming; it is tried again on slow ticks only.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pynvml

from collectors.agent.fast import GpmPair, Reader, fast_candidates, handle_key
from collectors.agent.fields import GPU_FIELDS
from collectors.agent.nvmlcall import call_or_none, error_name, is_gpu_lost, is_unsupported
from collectors.agent.slow import SlowPlan, count_links
from collectors.agent.wire import finite

Errors = Dict[str, str]
_SLOT = {name: slot for slot, name in enumerate(GPU_FIELDS)}


class GpuLost(Exception):
    """Raised inside a read when NVML says the GPU fell off the bus."""


class Gpu:
    """One GPU: its cached handle, what to read from it, and whether it is lost."""

    def __init__(self, index: int, handle: Any) -> None:
        self.index = index
        self.handle = handle
        self.key = handle_key(handle) if handle is not None else None
        self.uuid = ""
        self.info: Dict[str, Any] = {"index": index, "uuid": "", "name": ""}
        self.readers: List[Tuple[Tuple[str, ...], Reader]] = []
        self.slow = SlowPlan(0)
        self.gpm = GpmPair()
        self.unsupported: List[str] = []
        self.lost = handle is None
        # False until a probe completes: a GPU lost during its probe is probed again
        # when it answers (on a slow tick), rather than read with half a plan.
        self.probed = False

    def describe(self) -> None:
        """Fill the hello facts; a fact that fails is null (the GPU may be half-broken)."""
        h = self.handle
        self.uuid = call_or_none(pynvml.nvmlDeviceGetUUID, h) or ""
        pci = call_or_none(pynvml.nvmlDeviceGetPciInfo, h)
        memory = call_or_none(pynvml.nvmlDeviceGetMemoryInfo, h)
        limit = call_or_none(pynvml.nvmlDeviceGetEnforcedPowerLimit, h)
        self.info.update(
            uuid=self.uuid,
            name=call_or_none(pynvml.nvmlDeviceGetName, h) or "",
            serial=call_or_none(pynvml.nvmlDeviceGetSerial, h),
            pci_bus_id=pci.busId if pci is not None else None,
            memory_total_bytes=memory.total if memory is not None else None,
            power_limit_w=finite(limit / 1000.0) if limit is not None else None,
        )

    def probe(self) -> None:
        """Pick a working reader per field group and a slow plan; note what cannot work.

        Raises:
            GpuLost: the GPU is already gone.
        """
        self.readers, self.unsupported = [], []
        self.gpm.close()
        try:
            for names, candidates in fast_candidates(self.gpm):
                reader = _first_supported(self.handle, candidates)
                if reader is None:
                    self.unsupported.extend(names)
                else:
                    self.readers.append((names, reader))
            self.slow = SlowPlan(count_links(self.handle))
            self.unsupported.extend(self.slow.probe(self.handle))
        except pynvml.NVMLError as exc:
            if is_gpu_lost(exc):
                raise GpuLost() from None
            raise
        self.info["nvlinks"] = self.slow.links
        self.probed = True

    def read_fast(self) -> Tuple[List[Any], Errors]:
        """GPU_FIELDS values and the errors of fields that failed this tick.

        Raises:
            GpuLost: the GPU is gone.
        """
        if not self.probed:
            self.describe()  # facts hello could not give (events carry the uuid)
            self.probe()
        values: List[Any] = [None] * len(GPU_FIELDS)
        errs: Errors = {}
        for names, reader in self.readers:
            try:
                got = reader(self.handle)
            except Exception as exc:
                if is_gpu_lost(exc):
                    raise GpuLost() from None
                for name in names:
                    errs[name] = error_name(exc)
                continue
            for name, value in zip(names, got):
                if isinstance(value, pynvml.NVMLError):
                    errs[name] = error_name(value)
                else:
                    values[_SLOT[name]] = value
        return values, errs

    def read_slow(self) -> Tuple[List[Any], Optional[List[List[Any]]], Errors]:
        """Slow values, per-link values and errors (see :meth:`SlowPlan.read`).

        Raises:
            GpuLost: the GPU is gone.
        """
        try:
            return self.slow.read(self.handle)
        except pynvml.NVMLError as exc:
            if is_gpu_lost(exc):
                raise GpuLost() from None
            raise


def _first_supported(handle: Any, candidates: List[Reader]) -> Optional[Reader]:
    """The first reader the driver supports; one failing otherwise still counts."""
    for reader in candidates:
        try:
            reader(handle)
        except Exception as exc:
            if is_gpu_lost(exc):
                raise
            if is_unsupported(exc):
                continue
        return reader
    return None


def open_gpus() -> List[Gpu]:
    """Every GPU NVML lists, described and probed. NVML must be initialised.

    A GPU lost before or during the probe is kept, marked lost, so hello still lists it.
    """
    gpus = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except pynvml.NVMLError:
            # GpuIsLost or Unknown at handle time: the slot exists but is unusable.
            gpus.append(Gpu(index, None))
            continue
        gpu = Gpu(index, handle)
        gpu.describe()
        try:
            gpu.probe()
        except GpuLost:
            gpu.lost = True
        gpus.append(gpu)
    return gpus


def system_versions() -> Dict[str, Optional[str]]:
    """Driver, CUDA and NVML versions for hello; null where NVML cannot say."""
    cuda = call_or_none(pynvml.nvmlSystemGetCudaDriverVersion_v2)
    return {
        "driver": call_or_none(pynvml.nvmlSystemGetDriverVersion),
        "cuda": "%d.%d" % (cuda // 1000, (cuda % 1000) // 10) if cuda else None,
        "nvml": call_or_none(pynvml.nvmlSystemGetNVMLVersion),
    }
