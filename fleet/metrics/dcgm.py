"""The fleet's GPU readings under dcgm-exporter's names, units and labels (docs/metrics.md).

Dashboards and alerts written for NVIDIA's dcgm-exporter read ``DCGM_FI_*`` series
labelled ``gpu, UUID, pci_bus_id, device, modelName, Hostname`` (``hostname`` on
dcgm-exporter's newer releases) and the driver version as ``DCGM_FI_DRIVER_VERSION``,
in DCGM's units: MiB for frame buffer, MHz for clocks, ratios (0-1) for the
profiling fields. This module serves exactly that shape from a snapshot, for the
whole fleet or for one node (``/metrics/dcgm/<node>``, which the HTTP service
discovery in :mod:`fleet.metrics.dcgm_sd` hands to Prometheus as one ``instance``
per node). Field names, units and label names follow dcgm-exporter's
``etc/default-counters.csv`` and ``internal/pkg/rendermetrics`` (NVIDIA/dcgm-exporter).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fleet.metrics.families import format_value, label_pairs, plain_value
from fleet.metrics.xids import XidTally
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot

MIB = float(1 << 20)
LABELS = (
    "gpu",
    "UUID",
    "pci_bus_id",
    "device",
    "modelName",
    "Hostname",
    "hostname",
    "DCGM_FI_DRIVER_VERSION",
)
Reading = float | int | bool | None


@dataclass(frozen=True, slots=True)
class DcgmField:
    """One DCGM field as dcgm-exporter exposes it, and how to read it from a GPU snapshot."""

    name: str
    type: Literal["gauge", "counter"]
    help: str
    read: Callable[[GpuSnapshot], Reading]

    def header(self) -> str:
        """The ``# HELP`` and ``# TYPE`` lines."""
        return f"# HELP {self.name} {self.help}\n# TYPE {self.name} {self.type}\n"


def _ratio(percent: float | None) -> float | None:
    return None if percent is None else percent / 100.0


def _mib(value: int | None) -> float | None:
    return None if value is None else value / MIB


def _fb_free(gpu: GpuSnapshot) -> float | None:
    if gpu.memory_total_bytes is None or gpu.mem_used_bytes is None:
        return None
    return max(gpu.memory_total_bytes - gpu.mem_used_bytes, 0) / MIB


def _field(name: str, type_: Literal["gauge", "counter"], help_: str, attr: str) -> DcgmField:
    def read(gpu: GpuSnapshot) -> Reading:
        value: Reading = getattr(gpu, attr)
        return value

    return DcgmField(name, type_, help_, read)


FIELDS: tuple[DcgmField, ...] = (
    _field("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock (MHz).", "sm_clock_mhz"),
    _field("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (C).", "temp_c"),
    _field("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (W).", "power_w"),
    _field(
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Enforced power limit (W).", "power_limit_w"
    ),
    _field("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (%).", "util_gpu"),
    _field("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (%).", "util_mem"),
    DcgmField(
        "DCGM_FI_DEV_FB_USED",
        "gauge",
        "Frame buffer used (MiB).",
        lambda gpu: _mib(gpu.mem_used_bytes),
    ),
    DcgmField("DCGM_FI_DEV_FB_FREE", "gauge", "Frame buffer free (MiB).", _fb_free),
    DcgmField(
        "DCGM_FI_DEV_FB_TOTAL",
        "gauge",
        "Frame buffer in total (MiB).",
        lambda gpu: _mib(gpu.memory_total_bytes),
    ),
    DcgmField(
        "DCGM_FI_PROF_SM_ACTIVE",
        "gauge",
        "Ratio of cycles an SM had a warp resident (0-1).",
        lambda gpu: _ratio(gpu.sm_active),
    ),
    DcgmField(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gauge",
        "Ratio of cycles the tensor pipes were active (0-1).",
        lambda gpu: _ratio(gpu.tensor_active),
    ),
    _field(
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "gauge",
        "Clock-event (throttle) reasons, NVML bitmask.",
        "clock_reasons",
    ),
    _field("DCGM_FI_DEV_PSTATE", "gauge", "Performance state (0 fastest).", "pstate"),
    _field("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "PCIe replays in total.", "pcie_replay"),
    _field(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Corrected (single-bit) ECC errors since driver load.",
        "ecc_corr_vol",
    ),
    _field(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Uncorrected (double-bit) ECC errors since driver load.",
        "ecc_unc_vol",
    ),
    _field(
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "counter",
        "Corrected (single-bit) ECC errors over the device's life.",
        "ecc_corr_agg",
    ),
    _field(
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "counter",
        "Uncorrected (double-bit) ECC errors over the device's life.",
        "ecc_unc_agg",
    ),
    _field(
        "DCGM_FI_DEV_RETIRED_SBE",
        "counter",
        "Pages retired for single-bit errors.",
        "retired_sbe",
    ),
    _field(
        "DCGM_FI_DEV_RETIRED_DBE",
        "counter",
        "Pages retired for double-bit errors.",
        "retired_dbe",
    ),
    _field(
        "DCGM_FI_DEV_RETIRED_PENDING",
        "counter",
        "1 when a page retirement waits for a reboot.",
        "retired_pending",
    ),
    _field(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Rows remapped for correctable errors.",
        "remap_corr",
    ),
    _field(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Rows remapped for uncorrectable errors.",
        "remap_unc",
    ),
    _field(
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "gauge",
        "1 when a row remap waits for a GPU reset.",
        "remap_pending",
    ),
    _field(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "gauge",
        "1 when a row remap failed.",
        "remap_failure",
    ),
)

XID_ERRORS = DcgmField(
    "DCGM_FI_DEV_XID_ERRORS",
    "gauge",
    "Code of the last XID seen on the GPU since this exporter started (0: none).",
    lambda gpu: None,  # read from the XID tally, which sees every snapshot
)

HEADERS = tuple(field.header() for field in (*FIELDS, XID_ERRORS))


def gpu_labels(node: NodeSnapshot, gpu: GpuSnapshot) -> str:
    """The label pairs dcgm-exporter puts on a GPU's series, for ``node``'s ``gpu``."""
    values = (
        str(gpu.index),
        gpu.uuid,
        gpu.pci_bus_id or "",
        f"nvidia{gpu.index}",
        gpu.name,
        node.name,
        node.name,
        node.driver or "",
    )
    return label_pairs(LABELS, values)


def _node_chunks(node: NodeSnapshot, xids: dict[int, int]) -> list[str]:
    """Per field (``FIELDS`` then ``XID_ERRORS``): the node's lines, joined."""
    heads = [gpu_labels(node, gpu) for gpu in node.gpus]
    chunks: list[str] = []
    for field in FIELDS:
        lines = []
        for gpu, labels in zip(node.gpus, heads, strict=True):
            value = plain_value(field.read(gpu))
            text = None if value is None else format_value(value)
            if text is not None:
                lines.append(f"{field.name}{{{labels}}} {text}\n")
        chunks.append("".join(lines))
    name = XID_ERRORS.name
    chunks.append(
        "".join(
            f"{name}{{{labels}}} {xids.get(gpu.index, 0)}\n"
            for gpu, labels in zip(node.gpus, heads, strict=True)
        )
    )
    return chunks


class DcgmExposition:
    """Renders snapshots in dcgm-exporter's shape, reusing a node's text while it is unchanged.

    Args:
        xids: the running XID tally subscribed to the runtime (shared with the
            native exposition), for ``DCGM_FI_DEV_XID_ERRORS``.
    """

    def __init__(self, xids: XidTally) -> None:
        self._xids = xids
        self._cache: dict[str, tuple[NodeSnapshot, dict[int, int], list[str]]] = {}
        # Nodes by name for the snapshot last seen: with one target per node, a scrape
        # round asks for every node once, and a scan per request would be quadratic.
        self._indexed: FleetSnapshot | None = None
        self._by_name: dict[str, NodeSnapshot] = {}
        self._lock = threading.Lock()  # renders run in worker threads

    def render(self, snapshot: FleetSnapshot | None, node: str | None = None) -> bytes | None:
        """The exposition of every node, or of the node named ``node``.

        Returns None when ``node`` is given and the fleet has no such node. Before the
        first snapshot every family is present without samples.
        """
        nodes: tuple[NodeSnapshot, ...] = () if snapshot is None else snapshot.nodes
        self._xids.observe(snapshot)
        with self._lock:
            if node is not None:
                found = self._node(snapshot, node)
                if found is None:
                    return None
                nodes = (found,)
            per_node = [self._chunks(n) for n in nodes]
            if node is None and snapshot is not None:
                names = {n.name for n in snapshot.nodes}
                self._cache = {k: v for k, v in self._cache.items() if k in names}
        out: list[str] = []
        for slot, header in enumerate(HEADERS):
            out.append(header)
            out.extend(chunks[slot] for chunks in per_node)
        return "".join(out).encode("utf-8")

    def _node(self, snapshot: FleetSnapshot | None, name: str) -> NodeSnapshot | None:
        if snapshot is None:
            return None
        if snapshot is not self._indexed:
            self._indexed = snapshot
            self._by_name = {n.name: n for n in snapshot.nodes}
        return self._by_name.get(name)

    def _chunks(self, node: NodeSnapshot) -> list[str]:
        xids = self._xids.last_codes(node.name)
        cached = self._cache.get(node.name)
        if cached is not None and cached[0] is node and cached[1] == xids:
            return cached[2]
        chunks = _node_chunks(node, xids)
        self._cache[node.name] = (node, xids, chunks)
        return chunks
