"""Each node's recorded time as the ledger's kinds: up, down, unmonitored, disputed.

``down`` is the provider's (positive evidence while the monitor was healthy);
``unmonitored`` is the monitor's blindness (recorded as such by the history: a
controller run's first connection attempt, credentials, a stall); ``disputed`` is an
unreachable stretch that was part of a mass loss of the fleet with no failing
witness, which the operator decides (docs/sla.md, "Three kinds of time").
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

from fleet.config.sla_section import SlaSection
from fleet.history.states import StateInterval

Kind = Literal["up", "down", "unmonitored", "disputed"]
_HEALTHY = re.compile(r"^(\d+) of (\d+) GPUs healthy$")


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of one node's time in one recorded state, judged as a ledger kind."""

    start_ms: int
    end_ms: int
    state: str
    kind: Kind
    reasons: tuple[str, ...]
    open: bool = False  # the interval had not ended when history was read
    disputed: bool = False  # part of a mass loss of the fleet (listed, whatever the rule)
    usable: int = 0  # weight still usable while down (healthy GPUs, unit "gpu")

    @property
    def down(self) -> bool:
        """Whether this stretch is the provider's downtime (before grace)."""
        return self.kind == "down"


def raw_segments(
    intervals: Iterable[StateInterval], open_end_ms: int
) -> dict[str, list[tuple[StateInterval, int, int]]]:
    """Each node's intervals as non-overlapping (interval, start, end); open ones end at
    ``open_end_ms``, a newer interval supersedes an older one."""
    by_node: dict[str, list[StateInterval]] = defaultdict(list)
    for interval in intervals:
        by_node[interval.node].append(interval)
    out: dict[str, list[tuple[StateInterval, int, int]]] = {}
    for node, rows in by_node.items():
        rows.sort(key=lambda i: i.start_ms)
        pieces = []
        for i, row in enumerate(rows):
            end = open_end_ms if row.end_ms is None else row.end_ms
            if i + 1 < len(rows):
                end = min(end, rows[i + 1].start_ms)
            if end > row.start_ms:
                pieces.append((row, row.start_ms, end))
        out[node] = pieces
    return out


def mass_spans(
    raw: dict[str, list[tuple[StateInterval, int, int]]], threshold_percent: float
) -> list[tuple[int, int]]:
    """Times when at least ``threshold_percent`` of the nodes (and at least two) were
    unreachable at once."""
    nodes = len(raw)
    need = max(2, math.ceil(nodes * threshold_percent / 100))
    changes: dict[int, int] = defaultdict(int)
    for pieces in raw.values():
        for row, start, end in pieces:
            if row.state == "unreachable":
                changes[start] += 1
                changes[end] -= 1
    spans: list[tuple[int, int]] = []
    count = 0
    for t, t_next in pairwise(sorted(changes)):
        count += changes[t]
        if count >= need:
            if spans and spans[-1][1] == t:
                spans[-1] = (spans[-1][0], t_next)
            else:
                spans.append((t, t_next))
    return spans


def node_weight(contract: SlaSection) -> int:
    """What one node weighs in the availability: 1, or its GPUs for unit "gpu"."""
    return contract.gpus_per_node if contract.unit == "gpu" else 1


def _kind(row: StateInterval, disputed: bool, contract: SlaSection) -> Kind:
    if row.state == "unmonitored":
        return "unmonitored"
    if row.state == "unreachable":
        if disputed and not contract.disputed_counts_as_down:
            return "disputed"
        counts = contract.downtime == "reachability" or contract.unreachable_counts_as_down
        return "down" if counts else "up"
    if row.state == "broken":
        return "down" if contract.downtime == "broken-node" else "up"
    return "up"


def _usable_while_down(row: StateInterval, contract: SlaSection) -> int:
    if contract.unit != "gpu" or row.state != "broken":
        return 0
    for reason in row.reasons:
        match = _HEALTHY.match(reason)
        if match:
            return min(int(match.group(1)), contract.gpus_per_node)
    return 0


def _overlaps(start: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(s < end and start < e for s, e in spans)


def node_timelines(
    intervals: Iterable[StateInterval], open_end_ms: int, contract: SlaSection
) -> dict[str, list[Segment]]:
    """Every node's segments, judged under ``contract``."""
    raw = raw_segments(intervals, open_end_ms)
    mass = mass_spans(raw, float(contract.disputed_threshold_percent))
    out: dict[str, list[Segment]] = {}
    for node, pieces in raw.items():
        segments = []
        for row, start, end in pieces:
            disputed = row.state == "unreachable" and _overlaps(start, end, mass)
            segments.append(
                Segment(
                    start,
                    end,
                    row.state,
                    _kind(row, disputed, contract),
                    row.reasons,
                    open=row.end_ms is None,
                    disputed=disputed,
                    usable=_usable_while_down(row, contract),
                )
            )
        out[node] = segments
    return out
