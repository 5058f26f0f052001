"""The fleet's GPU readings under dcgm-exporter's names, units and labels (docs/metrics.md).

Dashboards and alerts written for NVIDIA's dcgm-exporter read ``DCGM_FI_*`` series
labelled ``gpu, UUID, pci_bus_id, device, modelName, Hostname`` (``hostname`` on
dcgm-exporter's newer releases) and the driver version as ``DCGM_FI_DRIVER_VERSION``,
in DCGM's units: MiB for frame buffer, MHz for clocks, ratios (0-1) for the
profiling fields. This module serves exactly that shape from a snapshot, for the
whole fleet or for one node (``/metrics/dcgm/<node>``, which the HTTP service
discovery in :mod:`exporter.dcgm_sd` hands to Prometheus as one ``instance``
per node). The fields are in :mod:`exporter.dcgm_fields`; label names and their
order follow dcgm-exporter's ``internal/pkg/rendermetrics`` (NVIDIA/dcgm-exporter).
"""

from __future__ import annotations

import math
import threading

from exporter.dcgm_fields import FIELDS, LABELS, XID_ERRORS, Reading
from exporter.families import format_value, label_pairs, plain_value
from exporter.xids import XidTally
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot

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


GpuKey = tuple[str, int, str, str, str | None, str | None]
"""What a GPU's labels depend on: node, index, UUID, model, PCI bus id, driver."""


def _gpu_key(node: NodeSnapshot, gpu: GpuSnapshot) -> GpuKey:
    return (node.name, gpu.index, gpu.uuid, gpu.name, gpu.pci_bus_id, node.driver)


def _line_heads(node: NodeSnapshot, gpu: GpuSnapshot) -> tuple[str, ...]:
    """``NAME{labels} `` of every field (``FIELDS`` then ``XID_ERRORS``) for one GPU."""
    labels = gpu_labels(node, gpu)
    return tuple(f"{field.name}{{{labels}}} " for field in (*FIELDS, XID_ERRORS))


def _text(value: Reading) -> str | None:
    """A value as the text format writes it; None (omitted) for a missing reading or NaN."""
    if value is None:
        return None
    if value.__class__ is float:
        if math.isnan(value):
            return None
        return repr(value) if math.isfinite(value) else format_value(value)
    if value.__class__ is int:
        return repr(value)
    number = plain_value(value)
    return None if number is None else format_value(value)


def _node_chunks(
    gpus: tuple[GpuSnapshot, ...], heads: list[tuple[str, ...]], xids: dict[int, int]
) -> list[str]:
    """Per field (``FIELDS`` then ``XID_ERRORS``): the node's lines, joined."""
    chunks: list[str] = []
    for slot, field in enumerate(FIELDS):
        read = field.read
        lines = []
        for gpu, head in zip(gpus, heads, strict=True):
            text = _text(read(gpu))
            if text is not None:
                lines.append(f"{head[slot]}{text}\n")
        chunks.append("".join(lines))
    last = len(FIELDS)
    chunks.append(
        "".join(
            f"{head[last]}{xids.get(gpu.index, 0)}\n" for gpu, head in zip(gpus, heads, strict=True)
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
        # Per node, each GPU's line heads: built once per GPU, not per scrape.
        self._heads: dict[str, dict[GpuKey, tuple[str, ...]]] = {}
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
                self._heads = {k: v for k, v in self._heads.items() if k in names}
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
        known = self._heads.get(node.name, {})
        current: dict[GpuKey, tuple[str, ...]] = {}
        for gpu in node.gpus:
            key = _gpu_key(node, gpu)
            current[key] = known.get(key) or _line_heads(node, gpu)
        self._heads[node.name] = current  # a swapped GPU's old heads go here
        heads = list(current.values())
        chunks = _node_chunks(node.gpus, heads, xids)
        self._cache[node.name] = (node, xids, chunks)
        return chunks
