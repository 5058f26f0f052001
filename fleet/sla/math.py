"""The SLA math of docs/sla.md, exactly: outages, grace, shortfall, availability, credits.

Times are integer milliseconds, so every sum is exact; availability is a ``Fraction``
and money a ``Decimal`` rounded to cents only at the end.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from itertools import pairwise

from fleet.config.sla_section import SlaSection
from fleet.history.states import StateInterval
from fleet.sla.period import Period

HOUR_MS = 3_600_000
CENT = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of one node's time in one state."""

    start_ms: int
    end_ms: int
    state: str
    down: bool
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Outage:
    """A maximal run of one node's down time; ``counted`` unless shorter than the grace."""

    node: str
    start_ms: int
    end_ms: int  # an ongoing outage ends at the time of evaluation
    ongoing: bool
    states: tuple[str, ...]
    reasons: tuple[str, ...]
    counted: bool

    @property
    def minutes(self) -> float:
        """Length of the outage in minutes."""
        return (self.end_ms - self.start_ms) / 60_000


@dataclass(frozen=True, slots=True)
class Piece:
    """Monitored time during which ``shortfall`` committed slots had no usable node."""

    start_ms: int
    end_ms: int
    shortfall: int


@dataclass(frozen=True, slots=True)
class SlaResult:
    """Everything the SLA views show for one period."""

    period: Period
    committed_nodes: int
    monitored_ms: int
    down_node_ms: int
    availability_pct: Fraction | None  # None when nothing was monitored
    outages: tuple[Outage, ...]
    pieces: tuple[Piece, ...]
    tier_credit_pct: Decimal
    bill: Decimal
    tiered_credit: Decimal
    pro_rata_credit: Decimal
    owed: Decimal

    @property
    def coverage_pct(self) -> Fraction:
        """Monitored share of the period, in percent."""
        return Fraction(100 * self.monitored_ms, self.period.end_ms - self.period.start_ms)


def monitored_spans(coverage: Iterable[tuple[int, int]], period: Period) -> list[tuple[int, int]]:
    """The union of coverage spans inside the period, as disjoint sorted spans."""
    clipped = sorted(
        (max(s, period.start_ms), min(e, period.end_ms))
        for s, e in coverage
        if min(e, period.end_ms) > max(s, period.start_ms)
    )
    merged: list[tuple[int, int]] = []
    for s, e in clipped:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def node_segments(
    intervals: Iterable[StateInterval], now_ms: int, unreachable_down: bool
) -> dict[str, list[Segment]]:
    """Each node's intervals as non-overlapping segments (open ones end at ``now_ms``)."""
    by_node: dict[str, list[StateInterval]] = defaultdict(list)
    for interval in intervals:
        by_node[interval.node].append(interval)
    out: dict[str, list[Segment]] = {}
    for node, rows in by_node.items():
        rows.sort(key=lambda i: i.start_ms)
        segments = []
        for i, row in enumerate(rows):
            end = now_ms if row.end_ms is None else row.end_ms
            if i + 1 < len(rows):
                end = min(end, rows[i + 1].start_ms)  # a newer interval supersedes
            if end > row.start_ms:
                down = row.state == "broken" or (row.state == "unreachable" and unreachable_down)
                segments.append(Segment(row.start_ms, end, row.state, down, row.reasons))
        out[node] = segments
    return out


def find_outages(
    node: str, segments: Sequence[Segment], grace_ms: int, now_ms: int
) -> list[Outage]:
    """Maximal runs of touching down segments; runs shorter than ``grace_ms`` are forgiven."""
    runs: list[list[Segment]] = []
    for seg in segments:
        if seg.down and runs and runs[-1][-1].end_ms == seg.start_ms:
            runs[-1].append(seg)
        elif seg.down:
            runs.append([seg])
    outages = []
    for run in runs:
        start, end = run[0].start_ms, run[-1].end_ms
        states = tuple(dict.fromkeys(s.state for s in run))
        reasons = tuple(dict.fromkeys(r for s in run for r in s.reasons))
        counted = end - start >= grace_ms
        outages.append(Outage(node, start, end, end >= now_ms, states, reasons, counted))
    return outages


def usable_spans(segments: Sequence[Segment], outages: Sequence[Outage]) -> list[tuple[int, int]]:
    """When the node counts as usable: up (or not-counted unreachable) time and forgiven outages."""
    spans = [(s.start_ms, s.end_ms) for s in segments if not s.down]
    spans += [(o.start_ms, o.end_ms) for o in outages if not o.counted]
    return spans


def shortfall_pieces(
    usable: Iterable[tuple[int, int]], monitored: Sequence[tuple[int, int]], committed: int
) -> list[Piece]:
    """Sweep over time: monitored pieces with their constant shortfall, merged when equal."""
    changes: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # t → [Δusable, Δmonitored]
    for s, e in usable:
        changes[s][0] += 1
        changes[e][0] -= 1
    for s, e in monitored:
        changes[s][1] += 1
        changes[e][1] -= 1
    pieces: list[Piece] = []
    usable_now = monitoring = 0
    times = sorted(changes)
    for t, t_next in pairwise(times):
        usable_now += changes[t][0]
        monitoring += changes[t][1]
        if monitoring <= 0:
            continue
        short = max(0, committed - usable_now)
        if pieces and pieces[-1].end_ms == t and pieces[-1].shortfall == short:
            pieces[-1] = Piece(pieces[-1].start_ms, t_next, short)
        else:
            pieces.append(Piece(t, t_next, short))
    return pieces


def credits(
    contract: SlaSection, period: Period, down_node_ms: int, availability: Fraction | None
) -> tuple[Decimal, Decimal, Decimal, Decimal, Decimal]:
    """(tier credit %, bill, tiered credit, pro-rata credit, owed), money rounded to cents."""
    tier = Decimal(0)
    if availability is not None:
        hits = [t.credit_percent for t in contract.tiers if Fraction(t.below) > availability]
        tier = max(hits, default=Decimal(0))
    gpu_hour = Decimal(contract.gpus_per_node) * contract.gpu_hour_price
    bill = contract.committed_nodes * gpu_hour * period.days_in_month * 24
    tiered = bill * tier / 100
    pro_rata = Decimal(down_node_ms) / HOUR_MS * gpu_hour
    owed = tiered if contract.credit_model == "tiered" else pro_rata
    return tier, _cents(bill), _cents(tiered), _cents(pro_rata), _cents(owed)


def _cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def compute_sla(
    contract: SlaSection,
    period: Period,
    coverage: Iterable[tuple[int, int]],
    intervals: Iterable[StateInterval],
    now_ms: int,
) -> SlaResult:
    """Availability, outages and credits of ``period`` from recorded coverage and intervals."""
    monitored = monitored_spans(coverage, period)
    grace_ms = round(contract.grace_minutes * 60_000)
    segments = node_segments(intervals, now_ms, contract.unreachable_counts_as_down)
    outages: list[Outage] = []
    usable: list[tuple[int, int]] = []
    for node, segs in sorted(segments.items()):
        found = find_outages(node, segs, grace_ms, now_ms)
        outages += found
        usable += usable_spans(segs, found)
    pieces = shortfall_pieces(usable, monitored, contract.committed_nodes)
    down_ms = sum((p.end_ms - p.start_ms) * p.shortfall for p in pieces)
    monitored_ms = sum(e - s for s, e in monitored)
    availability = None
    if monitored_ms:
        availability = 100 * (1 - Fraction(down_ms, contract.committed_nodes * monitored_ms))
    tier, bill, tiered, pro_rata, owed = credits(contract, period, down_ms, availability)
    in_period = tuple(
        o for o in outages if o.end_ms > period.start_ms and o.start_ms < period.end_ms
    )
    return SlaResult(
        period,
        contract.committed_nodes,
        monitored_ms,
        down_ms,
        availability,
        in_period,
        tuple(pieces),
        tier,
        bill,
        tiered,
        pro_rata,
        owed,
    )
