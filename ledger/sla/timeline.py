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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from history.states import StateInterval
from ledger.sla.section import SlaSection

Kind = Literal["up", "down", "unmonitored", "disputed"]
_HEALTHY = re.compile(r"^(\d+) of (\d+) GPUs healthy$")
# Nodes lost "at once": their unreachable runs began within this of each other.
MASS_WINDOW_MS = 60_000


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


def mass_onsets(
    raw: dict[str, list[tuple[StateInterval, int, int]]],
    threshold_percent: float,
    window_ms: int = MASS_WINDOW_MS,
) -> set[tuple[str, int]]:
    """(node, start) of every unreachable run that began within ``window_ms`` of the
    starts of enough others: at least ``threshold_percent`` of the nodes, and two."""
    need = max(2, math.ceil(len(raw) * threshold_percent / 100))
    starts: list[tuple[int, str]] = []
    for node, pieces in raw.items():
        previous: tuple[str, int] | None = None  # (state, end) of the piece before
        for row, start, end in pieces:
            if row.state == "unreachable" and previous != ("unreachable", start):
                starts.append((start, node))
            previous = (row.state, end)
    starts.sort()
    onsets: set[tuple[str, int]] = set()
    j = 0
    for i, (t, _) in enumerate(starts):
        j = max(j, i)
        while j < len(starts) and starts[j][0] <= t + window_ms:
            j += 1
        if len({n for _, n in starts[i:j]}) >= need:
            onsets.update((n, s) for s, n in starts[i:j])
    return onsets


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


def node_timelines(
    intervals: Iterable[StateInterval], open_end_ms: int, contract: SlaSection
) -> dict[str, list[Segment]]:
    """Every node's segments, judged under ``contract``."""
    raw = raw_segments(intervals, open_end_ms)
    onsets = mass_onsets(raw, float(contract.disputed_threshold_percent))
    out: dict[str, list[Segment]] = {}
    for node, pieces in raw.items():
        segments = []
        run_start = None  # start of the unreachable run the piece belongs to
        for row, start, end in pieces:
            if row.state != "unreachable":
                run_start = None
            elif run_start is None or segments[-1].end_ms != start:
                run_start = start
            disputed = run_start is not None and (node, run_start) in onsets
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
