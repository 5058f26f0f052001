"""The fast path: Prometheus text format 0.0.4 built from cached label prefixes.

``generate_latest`` formats, escapes and sorts every label of every sample in
Python (about 1.2 s for 160,000 series). Here the text before the value of each
series (``name{node="n1",gpu="0",uuid="GPU-…",model="…"} ``) is built once per
entity (keyed by node, index, uuid and model for a GPU) and only values are
formatted on a scrape. A node whose ``NodeSnapshot`` object is the one seen on
the previous scrape reuses its finished text outright. The output parses to the
same families, labels and values as :class:`fleet.metrics.collector.FleetCollector`
(tests/metrics/test_parity.py), because both read the tables in
:mod:`fleet.metrics.catalog`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable
from typing import Any

from fleet.metrics.catalog import FAMILIES, FLEET, GPU, GPU_XID, NODE, PORT, SCRAPE_DURATION, SLA
from fleet.metrics.families import (
    Column,
    EntityKind,
    Family,
    column_reader,
    format_value,
    label_pairs,
)
from fleet.metrics.xids import XidTally
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Compiled = tuple[tuple[str, ...], tuple[str, ...], list[Any]]
"""Per entity: line heads of its fast columns, of its slow columns, and each other spec's cache."""


class _Columns:
    """A group of columns rendered together: one batched read, then one line per value."""

    def __init__(self, columns: tuple[Column, ...], slots: dict[Family, int]) -> None:
        self.columns = columns
        self.read = column_reader(columns)
        self.slots = tuple(slots[c.family] for c in columns)
        self.scales = tuple(c.scale for c in columns)

    def render(self, entity: Any, heads: tuple[str, ...], parts: list[list[str]]) -> None:
        lines = zip(self.read(entity), heads, self.slots, self.scales, strict=True)
        for value, head, slot, scale in lines:
            if value is None:
                continue
            if scale is not None:
                value = value * scale
            cls = value.__class__
            if cls is float:
                if value != value:  # NaN: a reading that failed, omitted like None
                    continue
                text = repr(value)
                if text[-1] == "f":
                    text = "+Inf" if value > 0 else "-Inf"
            elif cls is int:
                text = repr(value)
            else:
                formatted = format_value(value)  # bool, or a numeric type from elsewhere
                if formatted is None:
                    continue
                text = formatted
            parts[slot].append(f"{head}{text}\n")


class _KindPlan:
    """How to render one entity kind fast: columns batched by cadence, the rest per spec."""

    def __init__(self, kind: EntityKind, slots: dict[Family, int]) -> None:
        self.kind = kind
        self.fast = _Columns(kind.columns(slow=False), slots)
        self.slow = _Columns(kind.columns(slow=True), slots)
        self.rendered = kind.rendered
        self.rendered_slots = tuple(slots[s.family] for s in self.rendered)

    def compile(self, base: tuple[str, ...]) -> Compiled:
        head = label_pairs(self.kind.base_labels, base)
        return (
            tuple(c.compile(head) for c in self.fast.columns),
            tuple(c.compile(head) for c in self.slow.columns),
            [s.compile(head) for s in self.rendered],
        )

    def render(
        self, entity: Any, compiled: Compiled, parts: list[list[str]], slow: bool = True
    ) -> None:
        """Append ``entity``'s lines to ``parts``; ``slow=False`` leaves the slow columns out."""
        fast_heads, slow_heads, caches = compiled
        self.fast.render(entity, fast_heads, parts)
        if slow:
            self.slow.render(entity, slow_heads, parts)
        for spec, cache, slot in zip(self.rendered, caches, self.rendered_slots, strict=True):
            spec.render(entity, cache, parts[slot])


class _NodeText:
    """A node's finished text per family slot, and what the next scrape may reuse."""

    __slots__ = ("chunks", "compiled", "node", "slow_chunks", "slow_values")

    def __init__(
        self,
        node: NodeSnapshot,
        chunks: list[str],
        compiled: dict[Hashable, Compiled],
        slow_values: tuple[Any, ...],
        slow_chunks: dict[int, str],
    ) -> None:
        self.node = node
        self.chunks = chunks
        self.compiled = compiled
        self.slow_values = slow_values  # GPU keys and slow-column values the chunks show
        self.slow_chunks = slow_chunks


class ExpositionRenderer:
    """Renders snapshots to exposition text, keeping caches between scrapes.

    Args:
        xids: the running XID tally (see :class:`fleet.metrics.xids.XidTally`); without
            one the renderer keeps its own, fed only by the snapshots it renders.
    """

    def __init__(self, *, xids: XidTally | None = None) -> None:
        self._xids = xids if xids is not None else XidTally()
        self._slots = {family: i for i, family in enumerate(FAMILIES)}
        self._headers = tuple(family.header() for family in FAMILIES)
        self._gpu = _KindPlan(GPU, self._slots)
        self._port = _KindPlan(PORT, self._slots)
        self._node = _KindPlan(NODE, self._slots)
        self._fleet = _KindPlan(FLEET, self._slots)
        self._sla = _KindPlan(SLA, self._slots)
        self._nodes: dict[str, _NodeText] = {}
        self._previous_s: float | None = None
        self._lock = threading.Lock()  # one render at a time: the caches are not shared-safe

    def render(self, snapshot: FleetSnapshot | None) -> bytes:
        """The exposition of ``snapshot`` (every family's HELP and TYPE even when empty)."""
        with self._lock:
            started = time.perf_counter()
            body = self._render(snapshot)
            self._previous_s = time.perf_counter() - started
            return body

    def _render(self, snapshot: FleetSnapshot | None) -> bytes:
        self._xids.observe(snapshot)
        shared = self._new_parts()
        nodes: dict[str, _NodeText] = {}
        if snapshot is not None:
            self._fleet.render(snapshot, self._fleet.compile(()), shared)
            if snapshot.sla is not None:
                self._sla.render(snapshot.sla, self._sla.compile((snapshot.sla.month,)), shared)
            for node in snapshot.nodes:
                nodes[node.name] = self._node_text(node)
        self._nodes = nodes  # nodes gone from the fleet drop out of the cache here
        self._render_xids(shared[self._slots[GPU_XID]])
        if self._previous_s is not None:
            shared[self._slots[SCRAPE_DURATION]].append(
                f"{SCRAPE_DURATION.name} {format_value(self._previous_s)}\n"
            )
        return self._assemble(shared, [n.chunks for n in nodes.values()])

    def _new_parts(self) -> list[list[str]]:
        return [[] for _ in FAMILIES]

    def _node_text(self, node: NodeSnapshot) -> _NodeText:
        cached = self._nodes.get(node.name)
        if cached is not None and cached.node is node:
            return cached
        previous = cached.compiled if cached is not None else {}
        compiled: dict[Hashable, Compiled] = {}
        parts = self._new_parts()
        gpus = [(gpu, self._gpu_entry(node, gpu, previous, compiled)) for gpu in node.gpus]
        for gpu, entry in gpus:
            self._gpu.render(gpu, entry, parts, slow=False)
        slow_values, slow_chunks = self._slow_gpu_text(gpus, cached)
        for slot, chunk in slow_chunks.items():
            parts[slot].append(chunk)
        for port in (*node.ports, *node.nics):
            key = ("port", port.name, port.kind)
            entry = previous.get(key) or self._port.compile((node.name, port.name, port.kind))
            compiled[key] = entry
            self._port.render(port, entry, parts)
        entry = previous.get("node") or self._node.compile((node.name,))
        compiled["node"] = entry
        self._node.render(node, entry, parts)
        chunks = ["".join(p) for p in parts]
        return _NodeText(node, chunks, compiled, slow_values, slow_chunks)

    def _gpu_entry(
        self,
        node: NodeSnapshot,
        gpu: GpuSnapshot,
        previous: dict[Hashable, Compiled],
        compiled: dict[Hashable, Compiled],
    ) -> Compiled:
        key = ("gpu", gpu.index, gpu.uuid, gpu.name)
        entry = previous.get(key) or self._gpu.compile(
            (node.name, str(gpu.index), gpu.uuid, gpu.name)
        )
        compiled[key] = entry
        return entry

    def _slow_gpu_text(
        self, gpus: list[tuple[GpuSnapshot, Compiled]], cached: _NodeText | None
    ) -> tuple[tuple[Any, ...], dict[int, str]]:
        """The slow columns' text of a node's GPUs, reused while none of their values moved.

        Slow fields (ECC, retired pages, remapping, NVLink, ...) change every 10 s at
        most, and usually never: at 1 Hz most scrapes find them as they were.
        """
        read = self._gpu.slow.read
        values = tuple((g.index, g.uuid, g.name, read(g)) for g, _ in gpus)
        if cached is not None and cached.slow_values == values:
            return values, cached.slow_chunks
        parts = self._new_parts()
        for gpu, (_, slow_heads, _) in gpus:
            self._gpu.slow.render(gpu, slow_heads, parts)
        return values, {slot: "".join(parts[slot]) for slot in set(self._gpu.slow.slots)}

    def _render_xids(self, out: list[str]) -> None:
        for labels, count in self._xids.counts():
            out.append(f"{GPU_XID.name}{{{label_pairs(GPU_XID.labels, labels)}}} {count}\n")

    def _assemble(self, shared: list[list[str]], node_chunks: list[list[str]]) -> bytes:
        out: list[str] = []
        for slot, header in enumerate(self._headers):
            out.append(header)
            out.extend(shared[slot])
            out.extend(chunks[slot] for chunks in node_chunks)
        return "".join(out).encode("utf-8")


def render_exposition(snapshot: FleetSnapshot | None) -> bytes:
    """The exposition of one snapshot, without caches (a server keeps an ExpositionRenderer).

    XID counts here are only the snapshot's own ``new_events``; the scrape-duration
    family is present but empty, since there was no previous scrape.
    """
    return ExpositionRenderer().render(snapshot)
