"""Per-node coverage across shards: a dead shard blinds only its own nodes.

The fleet was monitored while *any* shard was recording (the union of their
coverage). A node, though, was observed only while a shard that records it was
recording; for the rest of the fleet's monitored time its minutes are ``unmonitored``
(the monitor's fault: its shard was gone), never the provider's downtime and never
anybody else's blindness. The node's recorded intervals are cut at those gaps, so a
state seen before its shard died does not run on through time nobody watched (a
shard that restarts resumes its open intervals across the gap). The cause in both
places, the node's ``unmonitored`` intervals and the fleet's monitor gaps, is
"shard K/N silent".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from history.gaps import MonitorGap
from history.states import StateInterval
from ledger.sla.math import Span, subtract

# Where an open interval would end, for the span arithmetic: after any real time.
_OPEN_END = 2**62


@dataclass(frozen=True, slots=True)
class ShardHistory:
    """What one shard recorded: its name (``shard=K``), coverage and node intervals."""

    name: str
    coverage: list[Span]
    intervals: list[StateInterval] = field(default_factory=list)


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """``spans`` as disjoint sorted spans (touching and overlapping ones joined)."""
    merged: list[Span] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        elif e > s:
            merged.append((s, e))
    return merged


def fleet_coverage(shards: Sequence[ShardHistory]) -> list[Span]:
    """The fleet's monitored time: while any shard was recording."""
    return merge_spans(span for shard in shards for span in shard.coverage)


def node_gaps(shards: Sequence[ShardHistory]) -> dict[str, tuple[list[Span], tuple[str, ...]]]:
    """Each node's unmonitored stretches inside the fleet's coverage, with its shards."""
    fleet = fleet_coverage(shards)
    owners: dict[str, list[ShardHistory]] = {}
    for shard in shards:
        for node in {i.node for i in shard.intervals}:
            owners.setdefault(node, []).append(shard)
    out = {}
    for node, held_by in owners.items():
        seen = merge_spans(span for shard in held_by for span in shard.coverage)
        out[node] = (subtract(fleet, seen), tuple(s.name for s in held_by))
    return out


def _cut(interval: StateInterval, gaps: list[Span]) -> list[StateInterval]:
    end = _OPEN_END if interval.end_ms is None else interval.end_ms
    if not any(gs < end and ge > interval.start_ms for gs, ge in gaps):
        return [interval]
    return [
        replace(interval, start_ms=s, end_ms=None if e == _OPEN_END else e)
        for s, e in subtract([(interval.start_ms, end)], gaps)
    ]


def shard_number(name: str) -> int | None:
    """K of a ``shard=K`` name, None for any other name."""
    head, _, number = name.partition("=")
    return int(number) if head == "shard" and number.isdigit() else None


def shard_count(shards: Sequence[ShardHistory]) -> int:
    """How many shards the fleet has, as far as their names tell (the highest K)."""
    return max([len(shards), *(shard_number(s.name) or 0 for s in shards)])


def silent_cause(name: str, count: int) -> str:
    """The cause of a shard's stretch without records: "shard K/N silent"."""
    k = shard_number(name)
    return f"shard {k}/{count} silent" if k is not None else f"{name} silent"


def intervals_across_shards(
    shards: Sequence[ShardHistory], count: int | None = None
) -> list[StateInterval]:
    """Every shard's intervals cut at their node's gaps, plus those gaps as ``unmonitored``
    with their cause ("shard K/N silent"; ``count``: N, by default the highest K).

    Where no shard was ever missing, the intervals come back as they were recorded, so
    shards that all recorded the same time give exactly one collector's ledger.
    """
    n = shard_count(shards) if count is None else count
    gaps = node_gaps(shards)
    out: list[StateInterval] = []
    for shard in shards:
        for interval in shard.intervals:
            out.extend(_cut(interval, gaps[interval.node][0]))
    for node, (spans, names) in sorted(gaps.items()):
        reason = ", ".join(silent_cause(name, n) for name in names)
        out.extend(StateInterval(node, "unmonitored", s, e, (reason,)) for s, e in spans)
    return sorted(out, key=lambda i: (i.start_ms, i.node))


def shard_gaps(shards: Sequence[ShardHistory], count: int | None = None) -> list[MonitorGap]:
    """The monitor's gaps a silent shard leaves inside the fleet's monitored time: each
    stretch another shard recorded and this one did not, caused "shard K/N silent"."""
    n = shard_count(shards) if count is None else count
    fleet = fleet_coverage(shards)
    out = [
        MonitorGap(s, e, silent_cause(shard.name, n))
        for shard in shards
        for s, e in subtract(fleet, merge_spans(shard.coverage))
    ]
    return sorted(out, key=lambda g: (g.start_ms, g.end_ms, g.cause))
