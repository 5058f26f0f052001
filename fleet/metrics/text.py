"""The fast path: Prometheus text format 0.0.4 built from cached label values and patterns.

``generate_latest`` formats, escapes and sorts every label of every sample in
Python (about 1.2 s for 160,000 series). Here each entity's escaped label values
(node, index, uuid and model for a GPU) are built once, each family's line pattern
(``name{node="%s",gpu="%s",...} %r``) once for the fleet, and a scrape only formats
values into them, the GPUs of a chunk of nodes one family at a time
(:mod:`fleet.metrics.blocks`, :mod:`fleet.metrics.patterns`). The values of the
state's own nodes are read from the tick's rows (:mod:`fleet.metrics.tick_rows`), so a
scrape builds none of their GPU and port objects. Within a family,
series come column by column per chunk, not node by node (the text format asks only
that a family's lines be together). The output parses to the
same families, labels and values as :class:`fleet.metrics.collector.FleetCollector`
(tests/metrics/test_parity.py), because both read the tables in
:mod:`fleet.metrics.catalog`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from fleet.metrics.blocks import EntityBlock
from fleet.metrics.catalog import (
    FAMILIES,
    FLEET,
    GPU,
    GPU_XID,
    LINK_EVENTS,
    NODE,
    PORT,
    SCRAPE_DURATION,
    SLA,
)
from fleet.metrics.columns import KindPlan
from fleet.metrics.families import format_value, label_pairs
from fleet.metrics.patterns import Templates
from fleet.metrics.tables import EntityKey, KindTable
from fleet.metrics.tick_rows import (
    Run,
    add_gpu_run,
    add_port_run,
    gpu_rows_of,
    port_rows_of,
    reads_gpus,
    reads_ports,
)
from fleet.metrics.xids import XidTally
from fleet.model import FleetSnapshot, NodeSnapshot
from fleet.state.rows import StateRows

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


NODES_PER_CHUNK = 64
"""Nodes rendered together: one ``%`` per column covers ~500 GPUs, and one chunk takes
a few milliseconds, after which the interpreter is offered to the event loop."""


class _ChunkText:
    """A chunk of nodes' text, and its blocks for the next scrape.

    The text is not kept between scrapes: at 1 Hz every node has changed by the next
    scrape, and keeping ~60 MB of text at 1,000 nodes to reuse it never paid.
    """

    __slots__ = ("blocks", "chunks")

    def __init__(self, chunks: list[bytes], blocks: dict[str, EntityBlock]) -> None:
        self.chunks = chunks
        self.blocks = blocks  # "gpu", "port", "node": absent when the chunk has none


def _gpu_objects(table: KindTable, node: NodeSnapshot) -> None:
    name, gpus = node.name, node.gpus
    table.add_objects([(name, g.index, g.uuid, g.name) for g in gpus], gpus)


def _port_objects(table: KindTable, node: NodeSnapshot) -> None:
    name, ports = node.name, (*node.ports, *node.nics)
    table.add_objects([(name, p.name, p.kind) for p in ports], ports)


def _node_object(table: KindTable, node: NodeSnapshot) -> None:
    table.add_objects([(node.name,)], (node,))


class _Source(NamedTuple):
    """How a chunk's entities of one kind get into its table."""

    objects: Callable[[KindTable, NodeSnapshot], None]
    # From the tick's rows, for the nodes that have them (no object built).
    rows_of: Callable[[NodeSnapshot], StateRows | None] | None = None
    add_run: Callable[[KindTable, Run], None] | None = None


_SOURCES: dict[str, _Source] = {
    "gpu": _Source(_gpu_objects, gpu_rows_of, add_gpu_run),
    "port": _Source(_port_objects, port_rows_of, add_port_run),
    "node": _Source(_node_object),
}


def _fill(table: KindTable, nodes: tuple[NodeSnapshot, ...], source: _Source) -> None:
    """Add ``nodes``' entities: runs of nodes from their rows, the others from objects."""
    rows_of, add_run = source.rows_of, source.add_run
    run: Run = []
    for node in nodes:
        rows = None if rows_of is None else rows_of(node)
        if rows is not None:
            run.append((node.name, rows))
            continue
        if run and add_run is not None:
            add_run(table, run)
            run = []
        source.objects(table, node)
    if run and add_run is not None:
        add_run(table, run)


def _offer_the_interpreter() -> None:
    """Let other threads (the event loop, when rendering in a worker) run for a moment.

    ``time.sleep(0)`` releases the GIL but often takes it straight back; a short
    real sleep hands it over.
    """
    time.sleep(0.0005)


class ExpositionRenderer:
    """Renders snapshots to exposition text, keeping caches between scrapes.

    Series heads (name and labels) are built once per entity and kept; a scrape
    formats values into them, a chunk of nodes at a time
    (:data:`NODES_PER_CHUNK`), offering the interpreter to other threads between
    chunks so a scrape rendered in a worker does not hold the event loop for long.

    Args:
        xids: the running XID tally (see :class:`fleet.metrics.xids.XidTally`); without
            one the renderer keeps its own, fed only by the snapshots it renders.
        between_chunks: called after each chunk of nodes (default: a 0.5 ms sleep).
    """

    def __init__(
        self,
        *,
        xids: XidTally | None = None,
        between_chunks: Callable[[], None] = _offer_the_interpreter,
    ) -> None:
        self._xids = xids if xids is not None else XidTally()
        self._between_chunks = between_chunks
        self._slots = {family: i for i, family in enumerate(FAMILIES)}
        self._headers = tuple(family.header() for family in FAMILIES)
        self._plans = {
            "gpu": KindPlan(GPU, self._slots, keeps_entities=True),
            "port": KindPlan(PORT, self._slots, keeps_entities=True),
            "node": KindPlan(NODE, self._slots),
        }
        # Read from the tick's rows where the state's nodes have them (no object built),
        # unless the catalog asks for an attribute the rows reader does not know.
        self._sources = dict(_SOURCES)
        if not reads_gpus(self._plans["gpu"].attrs):
            self._sources["gpu"] = _Source(_gpu_objects)
        if not reads_ports(self._plans["port"].attrs):
            self._sources["port"] = _Source(_port_objects)
        self._fleet = KindPlan(FLEET, self._slots)
        self._sla = KindPlan(SLA, self._slots)
        self._chunks: list[_ChunkText] = []
        # Spec caches by entity key, kept while the entity is in the fleet.
        self._compiled: dict[str, dict[EntityKey, list[Any]]] = {k: {} for k in self._plans}
        self._templates = Templates()
        self._previous_s: float | None = None
        self._lock = threading.Lock()  # one render at a time: the caches are not shared-safe

    def render(self, snapshot: FleetSnapshot | None) -> bytes:
        """The exposition of ``snapshot`` (every family's HELP and TYPE even when empty)."""
        return b"".join(self.render_parts(snapshot))

    def render_parts(self, snapshot: FleetSnapshot | None) -> list[bytes]:
        """The exposition of ``snapshot`` as parts to be sent in order, never joined.

        At 1,000 nodes the body is ~57 MB; a server that writes the parts one after the
        other holds it once instead of twice (the parts and their join).
        """
        with self._lock:
            started = time.perf_counter()
            parts = self._render(snapshot)
            self._previous_s = time.perf_counter() - started
            return parts

    def _render(self, snapshot: FleetSnapshot | None) -> list[bytes]:
        self._xids.observe(snapshot)
        shared = self._new_parts()
        chunks: list[_ChunkText] = []
        if snapshot is not None:
            self._fleet.render(snapshot, self._fleet.compile(()), shared)
            if snapshot.sla is not None:
                self._sla.render(snapshot.sla, self._sla.compile((snapshot.sla.month,)), shared)
            nodes = snapshot.nodes
            for start in range(0, len(nodes), NODES_PER_CHUNK):
                previous = self._chunks[len(chunks)] if len(chunks) < len(self._chunks) else None
                chunks.append(self._chunk_text(nodes[start : start + NODES_PER_CHUNK], previous))
                self._between_chunks()
        self._forget_gone_entities(chunks)
        self._render_xids(shared[self._slots[GPU_XID]])
        self._render_links(shared[self._slots[LINK_EVENTS]])
        if self._previous_s is not None:
            shared[self._slots[SCRAPE_DURATION]].append(
                f"{SCRAPE_DURATION.name} {format_value(self._previous_s)}\n"
            )
        body = self._assemble(shared, [c.chunks for c in chunks])
        for chunk in chunks:
            chunk.chunks = []
        self._chunks = chunks
        return body

    def _new_parts(self) -> list[list[str]]:
        return [[] for _ in FAMILIES]

    def _chunk_text(self, nodes: tuple[NodeSnapshot, ...], cached: _ChunkText | None) -> _ChunkText:
        old = cached.blocks if cached is not None else {}
        parts = self._new_parts()
        blocks = {}
        for kind, source in self._sources.items():
            plan = self._plans[kind]
            table = plan.table()
            _fill(table, nodes, source)
            if not table.keys:
                continue
            keys = tuple(table.keys)
            block = old.get(kind)
            if block is None or block.keys != keys:
                block = EntityBlock(plan, keys, self._compiled[kind], self._templates)
            block.render(table, parts)
            blocks[kind] = block
        # Encoded per chunk: the scrape then joins bytes (one pass less over the body).
        return _ChunkText(["".join(p).encode("utf-8") for p in parts], blocks)

    def _forget_gone_entities(self, chunks: list[_ChunkText]) -> None:
        """Drop compiled heads of entities no chunk shows any more (nodes gone, GPUs lost)."""
        for kind, compiled in self._compiled.items():
            shown = sum(len(c.blocks[kind].keys) for c in chunks if kind in c.blocks)
            if len(compiled) > shown:
                self._compiled[kind] = {
                    key: entry
                    for c in chunks
                    if kind in c.blocks
                    for key, entry in zip(c.blocks[kind].keys, c.blocks[kind].entries, strict=True)
                }

    def _render_xids(self, out: list[str]) -> None:
        for labels, count in self._xids.counts():
            out.append(f"{GPU_XID.name}{{{label_pairs(GPU_XID.labels, labels)}}} {count}\n")

    def _render_links(self, out: list[str]) -> None:
        for labels, count in self._xids.link_counts():
            out.append(f"{LINK_EVENTS.name}{{{label_pairs(LINK_EVENTS.labels, labels)}}} {count}\n")

    def _assemble(self, shared: list[list[str]], chunk_texts: list[list[bytes]]) -> list[bytes]:
        out: list[bytes] = []
        for slot, header in enumerate(self._headers):
            out.append("".join((header, *shared[slot])).encode("utf-8"))
            out.extend(chunks[slot] for chunks in chunk_texts if chunks[slot])
        return out


def render_exposition(snapshot: FleetSnapshot | None) -> bytes:
    """The exposition of one snapshot, without caches (a server keeps an ExpositionRenderer).

    XID counts here are only the snapshot's own ``new_events``; the scrape-duration
    family is present but empty, since there was no previous scrape.
    """
    return ExpositionRenderer().render(snapshot)
