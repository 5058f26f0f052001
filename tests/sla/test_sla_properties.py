"""Properties of the SLA math over random fleets, coverage and contracts."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from history.states import StateInterval
from ledger.sla import compute_sla, month_period
from ledger.sla.section import SlaSection, SlaTier

MIN_MS = 60_000
PERIOD = month_period("2026-02", now_ms=None)  # 28 days
START = PERIOD.start_ms
STATES = ("up", "broken", "unreachable")

runs = st.lists(st.tuples(st.integers(1, 3000), st.sampled_from(STATES)), max_size=12)
fleets = st.lists(st.tuples(st.integers(0, 3000), runs), max_size=6)
spans = st.lists(st.tuples(st.integers(0, 40_000), st.integers(1, 20_000)), max_size=5)


def intervals_of(fleet: list[tuple[int, list[tuple[int, str]]]]) -> list[StateInterval]:
    """Each node starts at an offset (minutes) and runs through its (minutes, state) list."""
    out = []
    for n, (offset, node_runs) in enumerate(fleet):
        t = START + offset * MIN_MS
        for i, (minutes, state) in enumerate(node_runs):
            last = i == len(node_runs) - 1
            end = None if last else t + minutes * MIN_MS
            out.append(StateInterval(f"n{n}", state, t, end))  # type: ignore[arg-type]
            t += minutes * MIN_MS
    return out


def coverage_of(raw: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(START + s * MIN_MS, START + (s + d) * MIN_MS) for s, d in raw]


def contract(committed: int, grace: float, unreachable_down: bool = True) -> SlaSection:
    return SlaSection(
        committed_nodes=committed,
        grace_minutes=grace,
        gpu_hour_price=Decimal("1.10"),
        unreachable_counts_as_down=unreachable_down,
        tiers=(SlaTier(below=Decimal("99.5"), credit_percent=Decimal(10)),),
    )


@settings(max_examples=150, deadline=None)
@given(fleets, spans, st.integers(1, 5), st.floats(0, 600))
def test_availability_stays_between_0_and_100(
    fleet: list[tuple[int, list[tuple[int, str]]]],
    raw: list[tuple[int, int]],
    committed: int,
    grace: float,
) -> None:
    result = compute_sla(
        contract(committed, grace), PERIOD, coverage_of(raw), intervals_of(fleet), PERIOD.end_ms
    )
    assert result.down_node_ms <= committed * result.monitored_ms
    if result.availability_pct is not None:
        assert 0 <= result.availability_pct <= 100
    assert 0 <= result.coverage_pct <= 100


@settings(max_examples=150, deadline=None)
@given(fleets, spans, st.integers(1, 5), st.floats(0, 600), st.floats(0, 600))
def test_forgiving_more_never_lowers_availability(
    fleet: list[tuple[int, list[tuple[int, str]]]],
    raw: list[tuple[int, int]],
    committed: int,
    grace_a: float,
    grace_b: float,
) -> None:
    small, large = sorted((grace_a, grace_b))
    coverage, intervals = coverage_of(raw), intervals_of(fleet)
    strict = compute_sla(contract(committed, small), PERIOD, coverage, intervals, PERIOD.end_ms)
    lenient = compute_sla(contract(committed, large), PERIOD, coverage, intervals, PERIOD.end_ms)
    assert lenient.down_node_ms <= strict.down_node_ms
    assert lenient.owed <= strict.owed


@settings(max_examples=150, deadline=None)
@given(fleets, spans, st.integers(1, 5), st.floats(0, 600))
def test_counting_unreachable_never_raises_availability(
    fleet: list[tuple[int, list[tuple[int, str]]]],
    raw: list[tuple[int, int]],
    committed: int,
    grace: float,
) -> None:
    coverage, intervals = coverage_of(raw), intervals_of(fleet)
    counted = compute_sla(
        contract(committed, grace, True), PERIOD, coverage, intervals, PERIOD.end_ms
    )
    ignored = compute_sla(
        contract(committed, grace, False), PERIOD, coverage, intervals, PERIOD.end_ms
    )
    assert counted.down_node_ms >= ignored.down_node_ms


@settings(max_examples=150, deadline=None)
@given(fleets, spans, st.integers(1, 5), st.floats(0, 600), st.data())
def test_calling_time_unmonitored_never_adds_downtime(
    fleet: list[tuple[int, list[tuple[int, str]]]],
    raw: list[tuple[int, int]],
    committed: int,
    grace: float,
    data: st.DataObject,
) -> None:
    """The monitor's blindness is never the provider's downtime: relabelling any interval
    as unmonitored can only lower D, and availability stays within 0-100. (Disputed time
    counts as down here: hiding some nodes can shrink a mass loss below the threshold.)"""
    coverage, intervals = coverage_of(raw), intervals_of(fleet)
    blind = [
        StateInterval(i.node, "unmonitored", i.start_ms, i.end_ms)
        if data.draw(st.booleans()) else i
        for i in intervals
    ]  # fmt: skip
    terms = contract(committed, grace).model_copy(update={"disputed_counts_as_down": True})
    seen = compute_sla(terms, PERIOD, coverage, intervals, PERIOD.end_ms)
    unseen = compute_sla(terms, PERIOD, coverage, blind, PERIOD.end_ms)
    assert unseen.down_node_ms <= seen.down_node_ms
    if unseen.availability_pct is not None:
        assert 0 <= unseen.availability_pct <= 100
    assert 0 <= unseen.coverage_pct <= 100


@settings(max_examples=100, deadline=None)
@given(fleets, spans, st.integers(1, 5))
def test_disputed_time_counts_only_when_the_contract_says_so(
    fleet: list[tuple[int, list[tuple[int, str]]]], raw: list[tuple[int, int]], committed: int
) -> None:
    coverage, intervals = coverage_of(raw), intervals_of(fleet)
    base = contract(committed, 0)
    listed = compute_sla(base, PERIOD, coverage, intervals, PERIOD.end_ms)
    counted = compute_sla(
        base.model_copy(update={"disputed_counts_as_down": True}),
        PERIOD, coverage, intervals, PERIOD.end_ms,
    )  # fmt: skip
    assert listed.down_node_ms <= counted.down_node_ms
    assert counted.disputed_ms == 0
