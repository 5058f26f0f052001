"""One period judged under one contract: the steps of docs/sla.md in order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

from history.ledger import LedgerInputs
from history.states import StateInterval
from ledger.sla.math import (
    HOUR_MS,
    InstanceResult,
    Ledger,
    Outage,
    SlaResult,
    Span,
    WeightedSpan,
    _cents,
    find_outages,
    maintenance_spans,
    monitored_spans,
    node_bill,
    node_weights,
    subtract,
    sweep,
    tier_of,
)
from ledger.sla.period import Period
from ledger.sla.section import SlaSection
from ledger.sla.timeline import Segment, node_timelines, node_weight


def _within(outage: Outage, spans: list[Span]) -> bool:
    """Whether the outage lies wholly inside one maintenance window (excused, not counted)."""
    return any(s <= outage.start_ms and outage.end_ms <= e for s, e in spans)


def _in_period(outage: Outage, period: Period) -> bool:
    return outage.end_ms > period.start_ms and outage.start_ms < period.end_ms


def _node_coverage(segments: list[Segment], monitored: list[Span], whole_ms: int) -> Fraction:
    """A node's observed share: monitored time less its own unmonitored stretches."""
    if whole_ms <= 0:
        return Fraction(0)
    blind = [(s.start_ms, s.end_ms) for s in segments if s.kind == "unmonitored"]
    seen = subtract(monitored, sorted(blind))
    return Fraction(100 * sum(e - s for s, e in seen), whole_ms)


def assess(contract: SlaSection, period: Period, inputs: LedgerInputs, now_ms: int) -> SlaResult:
    """Availability, outages and credits of ``period`` (see docs/sla.md, "The math")."""
    maintenance = maintenance_spans(contract, period)
    monitored = subtract(monitored_spans(inputs.coverage, period), maintenance)
    weight = node_weight(contract)
    threshold_ms = round(max(contract.grace_minutes, contract.min_downtime_minutes) * 60_000)
    merge_ms = round(contract.merge_outages_within_seconds * 1000)
    timelines = node_timelines(inputs.intervals, inputs.open_end_ms(now_ms), contract)
    outages: list[Outage] = []
    disputed: list[Outage] = []
    usable: list[WeightedSpan] = []
    unknown: list[WeightedSpan] = []
    contested: list[WeightedSpan] = []
    per_node: dict[str, Ledger] = {}
    coverage: dict[str, Fraction] = {}
    whole_ms = period.end_ms - period.start_ms - sum(e - s for s, e in maintenance)
    for node, segments in sorted(timelines.items()):
        found = [
            replace(o, counted=False) if _within(o, maintenance) else o
            for o in find_outages(node, segments, threshold_ms, inputs.live, merge_ms=merge_ms)
        ]
        outages += found
        disputed += find_outages(node, segments, 0, inputs.live, want="disputed")
        u, k, d = node_weights(segments, found, weight)
        usable.extend(u)
        unknown.extend(k)
        contested.extend(d)
        if contract.scope == "instance":
            per_node[node] = sweep(u, k, d, monitored, weight)
        coverage[node] = _node_coverage(segments, monitored, whole_ms)
    fleet = sweep(usable, unknown, contested, monitored, contract.committed_nodes * weight)
    availability = fleet.availability
    bill = node_bill(contract, period) * contract.committed_nodes
    unit_price = contract.gpu_hour_price * (contract.gpus_per_node if weight == 1 else 1)
    instances = tuple(
        _instance(contract, period, node, ledger) for node, ledger in per_node.items()
    )
    if contract.scope == "instance":
        tier = Decimal(0)
        tiered = sum((i.credit for i in instances), Decimal(0))
    else:
        tier = tier_of(contract, availability)
        tiered = bill * tier / 100
    pro_rata = Decimal(fleet.down) / HOUR_MS * unit_price
    owed = tiered if contract.credit_model == "tiered" else pro_rata
    capped = False
    if contract.credit_cap_percent is not None:
        cap = bill * contract.credit_cap_percent / 100
        capped = owed > cap
        tiered, pro_rata, owed = min(tiered, cap), min(pro_rata, cap), min(owed, cap)
    return SlaResult(
        period=period,
        committed_nodes=contract.committed_nodes,
        monitored_ms=fleet.monitored_ms,
        down_node_ms=fleet.down,
        availability_pct=availability,
        outages=tuple(o for o in outages if _in_period(o, period)),
        pieces=fleet.pieces,
        tier_credit_pct=tier,
        bill=_cents(bill),
        tiered_credit=_cents(tiered),
        pro_rata_credit=_cents(pro_rata),
        owed=_cents(owed),
        unmonitored_ms=fleet.unmonitored,
        disputed_ms=fleet.disputed,
        maintenance_ms=sum(e - s for s, e in maintenance),
        weight=weight,
        disputed=tuple(o for o in disputed if _in_period(o, period)),
        node_coverage=coverage,
        instances=instances,
        live=inputs.live,
        capped=capped,
    )


def _instance(contract: SlaSection, period: Period, node: str, ledger: Ledger) -> InstanceResult:
    availability = ledger.availability
    tier = tier_of(contract, availability)
    return InstanceResult(
        node, availability, ledger.down, tier, _cents(node_bill(contract, period) * tier / 100)
    )


def compute_sla(
    contract: SlaSection,
    period: Period,
    coverage: Iterable[Span] | LedgerInputs,
    intervals: Iterable[StateInterval] = (),
    now_ms: int = 0,
) -> SlaResult:
    """Availability, outages and credits of ``period`` from recorded history.

    ``coverage`` is either the coverage spans (with ``intervals``; open intervals then
    end at ``now_ms`` and are ongoing) or the :class:`LedgerInputs` read from history.
    """
    if isinstance(coverage, LedgerInputs):
        ledger_in = coverage
    else:
        ledger_in = LedgerInputs(list(coverage), list(intervals))
    return assess(contract, period, ledger_in, now_ms)
