"""The SLA math of docs/sla.md, exactly: outages, grace, shortfall, availability, credits.

Times are integer milliseconds, so every sum is exact; availability is a ``Fraction``
and money a ``Decimal`` rounded to cents only at the end.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from itertools import pairwise

from ledger.sla.period import Period
from ledger.sla.section import SlaSection
from ledger.sla.timeline import Segment

HOUR_MS = 3_600_000
CENT = Decimal("0.01")
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Outage:
    """A maximal run of one node's down (or disputed) time; ``counted`` unless short."""

    node: str
    start_ms: int
    end_ms: int  # where observation of it ended, or now while a live recorder observes it
    ongoing: bool
    states: tuple[str, ...]
    reasons: tuple[str, ...]
    counted: bool
    joined: int = 1  # outages joined across short recoveries (merge_outages_within_seconds)

    @property
    def minutes(self) -> float:
        """Length of the outage in minutes."""
        return (self.end_ms - self.start_ms) / 60_000


@dataclass(frozen=True, slots=True)
class Piece:
    """Monitored time with constant ``shortfall`` (down), ``unmonitored`` and ``disputed``
    weights (committed slots, or GPUs for unit "gpu")."""

    start_ms: int
    end_ms: int
    shortfall: int
    unmonitored: int = 0
    disputed: int = 0


@dataclass(frozen=True, slots=True)
class Ledger:
    """Weighted time sums of one sweep (a fleet, or one instance)."""

    pieces: tuple[Piece, ...]
    committed: int  # weight of the committed capacity
    monitored_ms: int  # |M|: recorder running, outside maintenance
    down: int  # sum of shortfall * time
    unmonitored: int  # sum of unknown slots * time inside M
    disputed: int  # sum of disputed slots * time inside M (when not counted as down)

    @property
    def denominator(self) -> int:
        """Observed capacity-time: committed * |M| less what was unknown or disputed."""
        return self.committed * self.monitored_ms - self.unmonitored - self.disputed

    @property
    def availability(self) -> Fraction | None:
        """Percent, or None when nothing was observed."""
        if self.denominator <= 0:
            return None
        return 100 * (1 - Fraction(self.down, self.denominator))


@dataclass(frozen=True, slots=True)
class InstanceResult:
    """One node judged alone (``scope = "instance"``)."""

    node: str
    availability_pct: Fraction | None
    down_ms: int  # weighted, like the fleet's
    tier_credit_pct: Decimal
    credit: Decimal


@dataclass(frozen=True, slots=True)
class SlaResult:
    """Everything the SLA views show for one period."""

    period: Period
    committed_nodes: int
    monitored_ms: int
    down_node_ms: int  # weighted: node-ms, or GPU-ms for unit "gpu"
    availability_pct: Fraction | None  # None when nothing was observed
    outages: tuple[Outage, ...]
    pieces: tuple[Piece, ...]
    tier_credit_pct: Decimal
    bill: Decimal
    tiered_credit: Decimal
    pro_rata_credit: Decimal
    owed: Decimal
    unmonitored_ms: int = 0  # weighted, inside monitored time
    disputed_ms: int = 0  # weighted, inside monitored time, when not counted
    maintenance_ms: int = 0  # maintenance time inside the period
    weight: int = 1  # of one node: 1, or GPUs per node
    disputed: tuple[Outage, ...] = ()
    node_coverage: dict[str, Fraction] = field(default_factory=dict)
    instances: tuple[InstanceResult, ...] = ()
    live: bool = False
    capped: bool = False

    @property
    def coverage_pct(self) -> Fraction:
        """Observed share of the committed capacity's time outside maintenance, in percent."""
        span = self.period.end_ms - self.period.start_ms - self.maintenance_ms
        whole = self.committed_nodes * self.weight * span
        if whole <= 0:
            return Fraction(0)
        return Fraction(100 * (self.committed_nodes * self.weight * self.monitored_ms
                               - self.unmonitored_ms), whole)  # fmt: skip


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """The union of ``spans`` as disjoint sorted spans."""
    merged: list[Span] = []
    for s, e in sorted(x for x in spans if x[1] > x[0]):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def clip(spans: Iterable[Span], lo: int, hi: int) -> list[Span]:
    """``spans`` cut to ``[lo, hi)``, merged."""
    return merge_spans((max(s, lo), min(e, hi)) for s, e in spans)


def subtract(spans: Sequence[Span], holes: Sequence[Span]) -> list[Span]:
    """``spans`` less ``holes`` (both disjoint and sorted)."""
    out: list[Span] = []
    for s, e in spans:
        cur = s
        for hs, he in holes:
            if he <= cur or hs >= e:
                continue
            if hs > cur:
                out.append((cur, hs))
            cur = max(cur, he)
        if cur < e:
            out.append((cur, e))
    return out


def monitored_spans(coverage: Iterable[Span], period: Period) -> list[Span]:
    """The union of coverage spans inside the period, as disjoint sorted spans."""
    return clip(coverage, period.start_ms, period.end_ms)


def maintenance_spans(contract: SlaSection, period: Period) -> list[Span]:
    """The contract's maintenance windows inside the period."""
    windows = [
        (round(w.start.timestamp() * 1000), round(w.end.timestamp() * 1000))
        for w in contract.maintenance
    ]
    return clip(windows, period.start_ms, period.end_ms)


def find_outages(
    node: str,
    segments: Sequence[Segment],
    threshold_ms: int,
    live: bool,
    want: str = "down",
    merge_ms: int = 0,
) -> list[Outage]:
    """Maximal runs of touching ``want`` segments ("down" or "disputed"); down runs shorter
    than ``threshold_ms`` are forgiven. Runs whose recovery between them lasted at most
    ``merge_ms`` are one outage (its span judged against the threshold; only its down
    segments count as down). Ongoing only while a live recorder observes it."""
    runs: list[list[Segment]] = []
    joined: list[int] = []
    for seg in segments:
        hit = seg.down if want == "down" else seg.disputed
        if not hit:
            continue
        gap = seg.start_ms - runs[-1][-1].end_ms if runs else None
        if gap is not None and (gap == 0 or gap <= merge_ms):
            joined[-1] += gap > 0
            runs[-1].append(seg)
        else:
            runs.append([seg])
            joined.append(1)
    outages = []
    for run, count in zip(runs, joined, strict=True):
        start, end = run[0].start_ms, run[-1].end_ms
        states = tuple(dict.fromkeys(s.state for s in run))
        reasons = tuple(dict.fromkeys(r for s in run for r in s.reasons))
        ongoing = live and run[-1].open
        counted = end - start >= threshold_ms
        outages.append(Outage(node, start, end, ongoing, states, reasons, counted, count))
    return outages


WeightedSpan = tuple[int, int, int]


def node_weights(
    segments: Sequence[Segment], outages: Sequence[Outage], weight: int
) -> tuple[list[WeightedSpan], list[WeightedSpan], list[WeightedSpan]]:
    """(usable, unmonitored, disputed) weighted spans of one node.

    Up time is usable; so is a forgiven outage; a counted outage keeps only its healthy
    GPUs (unit "gpu"). Unmonitored and disputed time is neither usable nor down.
    """
    forgiven = [(o.start_ms, o.end_ms) for o in outages if not o.counted]
    usable: list[WeightedSpan] = []
    unknown: list[WeightedSpan] = []
    disputed: list[WeightedSpan] = []
    for seg in segments:
        span = (seg.start_ms, seg.end_ms)
        excused = seg.down and any(s <= span[0] and span[1] <= e for s, e in forgiven)
        if seg.kind == "up" or excused:
            usable.append((*span, weight))
        elif seg.down and seg.usable:
            usable.append((*span, seg.usable))
        elif seg.kind == "unmonitored":
            unknown.append((*span, weight))
        elif seg.kind == "disputed":
            disputed.append((*span, weight))
    return usable, unknown, disputed


def sweep(
    usable: Iterable[WeightedSpan],
    unknown: Iterable[WeightedSpan],
    disputed: Iterable[WeightedSpan],
    monitored: Sequence[Span],
    committed: int,
) -> Ledger:
    """Sweep over time: monitored pieces with constant weights, merged when equal."""
    changes: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for column, spans in enumerate((usable, unknown, disputed)):
        for s, e, w in spans:
            changes[s][column] += w
            changes[e][column] -= w
    for s, e in monitored:
        changes[s][3] += 1
        changes[e][3] -= 1
    pieces: list[Piece] = []
    now = [0, 0, 0, 0]
    for t, t_next in pairwise(sorted(changes)):
        now = [a + b for a, b in zip(now, changes[t], strict=True)]
        if now[3] <= 0:
            continue
        gap = max(0, committed - now[0])
        after_unknown = max(0, gap - now[1])
        short = max(0, after_unknown - now[2])
        piece = Piece(t, t_next, short, gap - after_unknown, after_unknown - short)
        last = pieces[-1] if pieces else None
        if last is not None and last.end_ms == t and _same_weights(last, piece):
            pieces[-1] = Piece(last.start_ms, t_next, short, last.unmonitored, last.disputed)
        else:
            pieces.append(piece)
    monitored_ms = sum(e - s for s, e in monitored)
    total = [0, 0, 0]
    for p in pieces:
        length = p.end_ms - p.start_ms
        total[0] += p.shortfall * length
        total[1] += p.unmonitored * length
        total[2] += p.disputed * length
    return Ledger(tuple(pieces), committed, monitored_ms, *total)


def _same_weights(a: Piece, b: Piece) -> bool:
    return (a.shortfall, a.unmonitored, a.disputed) == (b.shortfall, b.unmonitored, b.disputed)


def _cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def tier_of(contract: SlaSection, availability: Fraction | None) -> Decimal:
    """The largest credit percent among tiers whose ``below`` exceeds ``availability``."""
    if availability is None:
        return Decimal(0)
    hits = [t.credit_percent for t in contract.tiers if Fraction(t.below) > availability]
    return max(hits, default=Decimal(0))


def node_bill(contract: SlaSection, period: Period) -> Decimal:
    """One committed node's bill for the whole calendar month."""
    return Decimal(contract.gpus_per_node) * contract.gpu_hour_price * period.days_in_month * 24
