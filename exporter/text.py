"""The fast path: Prometheus text format 0.0.4 built from cached label values and patterns.

``generate_latest`` formats, escapes and sorts every label of every sample in
Python (about 1.2 s for 160,000 series). Here each entity's label head
(``node="a",gpu="0",uuid="...",model="..."``, escaped) is built once, each family's
line pattern (``name{%s} %r``) once for the fleet, and a scrape only formats values
into them, the GPUs of a chunk of nodes one family at a time
(:mod:`exporter.blocks`, :mod:`exporter.patterns`,
:mod:`exporter.chunks`). The values of the
state's own nodes are read from the tick's rows (:mod:`exporter.tick_rows`), so a
scrape builds none of their GPU and port objects. Within a family,
series come column by column per chunk, not node by node (the text format asks only
that a family's lines be together). The output parses to the
same families, labels and values as :class:`exporter.collector.FleetCollector`
(tests/metrics/test_parity.py), because both read the tables in
:mod:`exporter.catalog`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from exporter.blocks import EntityBlock
from exporter.catalog import (
    FLEET,
    GPU,
    GPU_XID,
    LINK_EVENTS,
    NODE,
    SCRAPE_DURATION,
    SLA,
    families,
    port_kind,
)
from exporter.chunks import ChunkScrape, Kinds, sources
from exporter.columns import KindPlan
from exporter.families import format_value, label_pairs
from exporter.node_reason import render_node_reasons
from exporter.patterns import Templates
from exporter.workload import render_workload
from exporter.xids import XidTally
from fleet.model import FleetSnapshot

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


NODES_PER_CHUNK = 64
"""Nodes rendered together: one join per column covers ~500 GPUs, and one family of one
chunk takes well under a millisecond (a streamed scrape's step). Changing it reorders
lines within a family (columns come chunk by chunk), not what they say."""


def _offer_the_interpreter() -> None:
    """Let other threads (the event loop, when rendering in a worker) run for a moment.

    ``time.sleep(0)`` releases the GIL but often takes it straight back; a short
    real sleep hands it over.
    """
    time.sleep(0.0005)


class ExpositionRenderer:
    """Renders snapshots to exposition text, keeping caches between scrapes.

    Series heads (name and labels) are built once per entity and kept; a scrape
    formats values into them, a chunk of nodes at a time (:data:`NODES_PER_CHUNK`).
    :meth:`stream_parts` hands the body out family by family and chunk by chunk, a
    few milliseconds of work per part, so the event loop can render it itself between
    other work and send each part as it comes (the endpoint does); :meth:`render_parts`
    renders it whole, offering the interpreter to other threads between chunks.

    Args:
        xids: the running XID tally (see :class:`exporter.xids.XidTally`); without
            one the renderer keeps its own, fed only by the snapshots it renders.
        between_chunks: called after each chunk of nodes by :meth:`render_parts`
            (default: a 0.5 ms sleep).
        raw_port_counters: also expose ``gpufleet_port_raw_value`` (``[metrics]
            raw_port_counters``; off by default, see :func:`exporter.catalog.port_kind`).
    """

    def __init__(
        self,
        *,
        xids: XidTally | None = None,
        between_chunks: Callable[[], None] = _offer_the_interpreter,
        raw_port_counters: bool = False,
    ) -> None:
        self._xids = xids if xids is not None else XidTally()
        self._between_chunks = between_chunks
        self._families = families(raw_port_counters)
        self._slots = {family: i for i, family in enumerate(self._families)}
        self._headers = tuple(family.header() for family in self._families)
        plans = {
            "gpu": KindPlan(GPU, self._slots, keeps_entities=True),
            "port": KindPlan(port_kind(raw_port_counters), self._slots, keeps_entities=True),
            "node": KindPlan(NODE, self._slots),
        }
        self._kinds = Kinds(plans, sources(plans), Templates())
        # Per family: the kinds that write it, and the kinds whose last family it is.
        self._writers = tuple(
            tuple(k for k, plan in plans.items() if slot in plan.slots)
            for slot in self._slots.values()
        )
        self._last_of = tuple(
            tuple(k for k, plan in plans.items() if plan.slots and max(plan.slots) == slot)
            for slot in self._slots.values()
        )
        self._fleet = KindPlan(FLEET, self._slots)
        self._sla = KindPlan(SLA, self._slots)
        self._blocks: list[dict[str, EntityBlock]] = []  # each chunk's, from the last scrape
        self._previous_s: float | None = None
        self._lock = threading.Lock()  # one render_parts at a time: the caches are not shared-safe
        self._epoch = 0  # renders begun: only the latest may advance (see stream_parts)

    def render(self, snapshot: FleetSnapshot | None) -> bytes:
        """The exposition of ``snapshot`` (every family's HELP and TYPE even when empty)."""
        return b"".join(self.render_parts(snapshot))

    def render_parts(self, snapshot: FleetSnapshot | None) -> list[bytes]:
        """The exposition of ``snapshot`` as parts to be sent in order, never joined."""
        with self._lock:
            self._epoch += 1
            epoch = self._epoch
            chunks = self._chunks(snapshot)
            started = time.perf_counter()
            for chunk in chunks:  # every entity read first, the interpreter offered between
                for kind in self._kinds.plans:
                    chunk.prepare(kind)
                self._between_chunks()
            parts = self._timed(self._parts(snapshot, chunks), epoch, time.perf_counter() - started)
            return [part for part in parts if part]

    def stream_parts(self, snapshot: FleetSnapshot | None) -> Iterator[bytes]:
        """The exposition of ``snapshot`` as parts, each rendered when asked for.

        Each part is well under a millisecond of work (a column of a chunk of nodes'
        GPUs, the counters of 128 ports, ...; empty where only entities were read), so
        the caller decides when to let other work run and sends each part as it comes:
        the body is never whole in memory. Advance it in one thread. A render started
        later supersedes it (advancing it then raises RuntimeError); one left unfinished
        leaves the renderer usable (its reused texts are dropped).
        """
        self._epoch += 1
        return self._timed(self._parts(snapshot, self._chunks(snapshot)), self._epoch, 0.0)

    def _chunks(self, snapshot: FleetSnapshot | None) -> list[ChunkScrape]:
        nodes = () if snapshot is None else snapshot.nodes
        kept, self._blocks = self._blocks, []  # kept again only when the scrape completes
        return [
            ChunkScrape(
                nodes[start : start + NODES_PER_CHUNK],
                self._kinds,
                kept[i] if i < len(kept) else {},
            )
            for i, start in enumerate(range(0, len(nodes), NODES_PER_CHUNK))
        ]

    def _timed(self, parts: Iterator[bytes], epoch: int, spent: float) -> Iterator[bytes]:
        """``parts``, the time spent making them (not waiting between them) kept as the
        scrape's duration once the last one is made; stopped if a later render began."""
        while True:
            if epoch != self._epoch:  # the caches are the later render's now
                raise RuntimeError("a later render of this renderer superseded this one")
            started = time.perf_counter()
            part = next(parts, None)
            spent += time.perf_counter() - started
            if part is None:
                self._previous_s = spent
                return
            yield part

    def _parts(self, snapshot: FleetSnapshot | None, chunks: list[ChunkScrape]) -> Iterator[bytes]:
        shared = self._shared(snapshot)
        for slot, header in enumerate(self._headers):
            yield "".join((header, *shared[slot])).encode("utf-8")
            writers = self._writers[slot]
            if writers:
                for chunk in chunks:
                    for piece in chunk.pieces(slot, writers):
                        yield piece if isinstance(piece, bytes) else piece.encode()
            for kind in self._last_of[slot]:
                for chunk in chunks:
                    chunk.release(kind)
        self._blocks = [chunk.blocks for chunk in chunks]
        yield render_node_reasons(snapshot).encode("utf-8")
        yield render_workload(() if snapshot is None else snapshot.jobs).encode("utf-8")

    def _shared(self, snapshot: FleetSnapshot | None) -> list[list[str]]:
        """The families that are not per node: fleet, SLA, XIDs, link events, scrape time."""
        self._xids.observe(snapshot)
        shared: list[list[str]] = [[] for _ in self._families]
        if snapshot is not None:
            self._fleet.render(snapshot, self._fleet.compile(()), shared)
            if snapshot.sla is not None:
                self._sla.render(snapshot.sla, self._sla.compile((snapshot.sla.month,)), shared)
        self._render_xids(shared[self._slots[GPU_XID]])
        self._render_links(shared[self._slots[LINK_EVENTS]])
        if self._previous_s is not None:
            shared[self._slots[SCRAPE_DURATION]].append(
                f"{SCRAPE_DURATION.name} {format_value(self._previous_s)}\n"
            )
        return shared

    def _render_xids(self, out: list[str]) -> None:
        for labels, count in self._xids.counts():
            out.append(f"{GPU_XID.name}{{{label_pairs(GPU_XID.labels, labels)}}} {count}\n")

    def _render_links(self, out: list[str]) -> None:
        for labels, count in self._xids.link_counts():
            out.append(f"{LINK_EVENTS.name}{{{label_pairs(LINK_EVENTS.labels, labels)}}} {count}\n")


def render_exposition(snapshot: FleetSnapshot | None, *, raw_port_counters: bool = False) -> bytes:
    """The exposition of one snapshot, without caches (a server keeps an ExpositionRenderer).

    XID counts here are only the snapshot's own ``new_events``; the scrape-duration
    family is present but empty, since there was no previous scrape.
    """
    return ExpositionRenderer(raw_port_counters=raw_port_counters).render(snapshot)
