"""A node shown from a shard's summary, whose GPU and port objects are built on first read.

A shard sends every node every tick, and a busy GPU's utilization, memory, power and
temperature move every second, so nearly every node's summary differs from the one
before. Converting such a node to a :class:`NodeSnapshot` with eight GpuSnapshots and
its ports cost about 120 µs a node on this project's VM (12,500 nodes: 1.5 s of CPU a
second). Here the summary is carried instead, as the node's rows
(:class:`fleet.lazy_fields.NodeRows`, the same mechanism the local state uses):

- ``gpus``, ``ports`` and ``nics`` are built from the summary the first time someone
  reads them (the node screen, the grid's visible lines), and a GPU or port whose
  summary equals the previous tick's is handed on as the same object;
- the briefs (identity, verdicts and links, what the header's counts and the per-tick
  readers compare) are the previous tick's tuple while none of their facts changed;
- a node whose own fields (status, state, reasons, driver, ...) held is copied slot by
  slot with the new rows (``restamped_node``), without ``__init__``.

So a tick costs a comparison per node plus work for what moved, and the objects only
for what is drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from cluster.wire import (
    GpuSummary,
    NodeSummary,
    PortSummary,
    gpu_from_summary,
    node_from_summary,
    port_from_summary,
)
from fleet.briefs import GpuBrief, PortAlarms, PortBrief
from fleet.lazy_fields import PENDING
from fleet.model import EventRecord, NodeSnapshot, restamped_node

# What a GPU's brief holds (fleet.briefs.GpuBrief): its readings may move under it.
_GPU_FACTS = attrgetter(
    "index",
    "uuid",
    "serial",
    "lost",
    "verdict",
    "reasons",
    "since",
    "nvlink_active",
    "nvlink_total",
    "probe_verdict",
)


class _Built:
    """The GPU or port objects of one node's summary parts, built on first read.

    Equal parts share one cell from tick to tick (built once for all those ticks); a
    new cell keeps the newest objects built before it (and their parts), to hand on
    each one whose part is equal. It keeps them, never the older cell, so cells never
    chain back through a node's ticks.
    """

    __slots__ = ("made", "parts", "reuse")

    def __init__(self, parts: tuple[Any, ...], before: _Built | None) -> None:
        self.parts = parts
        self.made: tuple[Any, ...] | None = None
        self.reuse: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
        if before is not None:
            self.reuse = before.reuse if before.made is None else (before.parts, before.made)

    def follow(self, parts: tuple[Any, ...]) -> _Built:
        """The cell of the next tick's ``parts``: this one while they are equal."""
        return self if parts == self.parts else _Built(parts, self)

    def build(self, make: Callable[[Any], Any]) -> tuple[Any, ...]:
        if self.made is None:
            old_parts, old_made = self.reuse or ((), ())
            self.made = tuple(
                old_made[i] if i < len(old_parts) and old_parts[i] == part else make(part)
                for i, part in enumerate(self.parts)
            )
            self.reuse = None
        return self.made


class SummaryRows:
    """The rows of a node shown from its summary (``NodeRows``, with no fleet columns).

    Args:
        summary: the node's summary of this tick.
        before: the rows of the node's previous tick, or None: its briefs and built
            objects are reused where their summaries are equal.
    """

    __slots__ = (
        "_facts",
        "gpu_briefs",
        "gpu_start",
        "gpus",
        "nic_briefs",
        "nics",
        "port_briefs",
        "ports",
        "summary",
    )
    gpu_briefs: tuple[GpuBrief, ...]
    port_briefs: tuple[PortBrief, ...]
    nic_briefs: tuple[PortBrief, ...]

    def __init__(self, summary: NodeSummary, before: SummaryRows | None = None) -> None:
        self.summary = summary
        self.gpu_start = 0  # an attached snapshot has no columns: readers use the objects
        self._facts = list(map(_GPU_FACTS, summary.gpus))
        if before is not None and self._facts == before._facts:
            self.gpu_briefs = before.gpu_briefs
        else:
            self.gpu_briefs = tuple(map(_gpu_brief, summary.gpus))
        if before is None:
            self.port_briefs = tuple(map(_port_brief, summary.ports))
            self.nic_briefs = tuple(map(_port_brief, summary.nics))
            self.gpus = _Built(summary.gpus, None)
            self.ports = _Built(summary.ports, None)
            self.nics = _Built(summary.nics, None)
        else:
            was = before.summary
            self.port_briefs = _port_briefs(summary.ports, was.ports, before.port_briefs)
            self.nic_briefs = _port_briefs(summary.nics, was.nics, before.nic_briefs)
            self.gpus = before.gpus.follow(summary.gpus)
            self.ports = before.ports.follow(summary.ports)
            self.nics = before.nics.follow(summary.nics)

    def build(self, which: str) -> tuple[Any, ...]:
        if which == "gpus":
            model = self.summary.model
            return self.gpus.build(lambda g: gpu_from_summary(g, model))
        return self._cell(which).build(port_from_summary)

    def built(self, which: str) -> tuple[Any, ...] | None:
        return self._cell(which).made

    def _cell(self, which: str) -> _Built:
        return self.gpus if which == "gpus" else self.ports if which == "ports" else self.nics

    def port_alarms(self) -> tuple[PortAlarms, ...]:
        return tuple(
            PortAlarms(p.link_downed_delta, p.symbol_error_rate, p.rcv_error_rate)
            for p in self.summary.ports
        )


@dataclass(frozen=True, slots=True)
class ShownNode:
    """A node as shown from its summary, with what the next tick compares it by."""

    node: NodeSnapshot
    rows: SummaryRows
    events: int  # the node's event-list version it was shown with
    util_sum: float  # its GPUs' utilization readings, summed (the fleet figure's part)
    util_gpus: int
    fresh: bool  # built anew (its own fields or events changed), not carried on


def show(
    summary: NodeSummary,
    events: int,
    before: ShownNode | None,
    event_list: Iterable[EventRecord] = (),
) -> ShownNode:
    """``summary`` as a node, reusing ``before`` (the same node's previous tick) where equal.

    ``events`` is the version of the node's ``event_list``: a node whose events changed
    is built anew (they are a field of the node).
    """
    if before is not None and before.events == events:
        old = before.rows.summary
        if old == summary:
            return before
        if _same_node_fields(summary, old):
            if summary.gpus == old.gpus and summary.ports == old.ports and summary.nics == old.nics:
                # Seen again with the same values (a steady node each tick): its rows stand.
                node = restamped_node(before.node, summary.last_seen, None, before.rows)
                return ShownNode(
                    node, before.rows, events, before.util_sum, before.util_gpus, False
                )
            rows = SummaryRows(summary, before.rows)
            node = restamped_node(before.node, summary.last_seen, None, rows)
            return ShownNode(node, rows, events, *_util(summary, old, before), fresh=False)
    rows = SummaryRows(summary, None if before is None else before.rows)
    # GPU and port objects are built from the rows when first read.
    pending = {"gpus": PENDING, "ports": PENDING, "nics": PENDING}
    node = node_from_summary(summary, **pending, events=tuple(event_list), rows=rows)
    return ShownNode(node, rows, events, *_util(summary, None, None), fresh=True)


def _util(
    summary: NodeSummary, old: NodeSummary | None, before: ShownNode | None
) -> tuple[float, int]:
    if before is not None and old is not None and old.gpus == summary.gpus:
        return before.util_sum, before.util_gpus
    utils = [g.util for g in summary.gpus if g.util is not None]
    return float(sum(utils)), len(utils)


def _same_node_fields(a: NodeSummary, b: NodeSummary) -> bool:
    """Whether the node's own fields (everything but GPUs, ports and ``last_seen``) held."""
    return (
        a.status == b.status
        and a.state == b.state
        and a.status_reason == b.status_reason
        and a.broken_reasons == b.broken_reasons
        and a.state_since == b.state_since
        and a.expected_gpus == b.expected_gpus
        and a.model == b.model
        and a.driver == b.driver
        and a.cuda == b.cuda
    )


def _port_briefs(
    ports: tuple[PortSummary, ...], was: tuple[PortSummary, ...], old: tuple[PortBrief, ...]
) -> tuple[PortBrief, ...]:
    """The ports' briefs: ``old`` while equal (an error rate alone is no brief's fact)."""
    if ports == was:  # the usual tick: one comparison in C, no brief built
        return old
    briefs = tuple(map(_port_brief, ports))
    return old if old == briefs else briefs


def _gpu_brief(g: GpuSummary) -> GpuBrief:
    return GpuBrief(
        g.index,
        g.uuid,
        g.serial,
        g.lost,
        g.verdict,
        g.reasons,
        g.since,
        g.nvlink_active,
        g.nvlink_total,
        g.probe_verdict,
    )


def _port_brief(p: PortSummary) -> PortBrief:
    return PortBrief(
        p.name,
        p.kind,
        p.state,
        p.phys_state,
        p.rate_gbps,
        p.expected_rate_gbps,
        p.link_downed,
        p.verdict,
        p.reasons,
        p.since,
    )
