"""SLA worked examples computed by hand, and properties of the math (docs/sla.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction

from history.states import StateInterval
from ledger.sla import compute_sla, month_period
from ledger.sla.section import SlaSection, SlaTier

TIERS = (
    SlaTier(below=Decimal("99.9"), credit_percent=Decimal(10)),
    SlaTier(below=Decimal("99.0"), credit_percent=Decimal(25)),
    SlaTier(below=Decimal("95"), credit_percent=Decimal(50)),
)


def ms(day: int, hour: int = 0, minute: int = 0, month: int = 9) -> int:
    """Milliseconds at 2026-<month>-<day> <hour>:<minute> UTC."""
    return int(datetime(2026, month, day, hour, minute, tzinfo=UTC).timestamp()) * 1000


def contract(**overrides: object) -> SlaSection:
    base: dict[str, object] = {
        "committed_nodes": 32,
        "gpus_per_node": 8,
        "gpu_hour_price": Decimal("2.37"),
        "grace_minutes": 30,
        "tiers": TIERS,
    }
    return SlaSection.model_validate(base | overrides)


def up(node: str, start: int, end: int | None) -> StateInterval:
    return StateInterval(node, "up", start, end)


def broken(node: str, start: int, end: int | None, why: str = "xid 79") -> StateInterval:
    return StateInterval(node, "broken", start, end, (why,))


def node_with_outage(node: str, down_from: int, down_to: int) -> list[StateInterval]:
    return [up(node, ms(1), down_from), broken(node, down_from, down_to), up(node, down_to, None)]


SEPTEMBER_END = ms(1, month=10)


def september_fleet() -> list[StateInterval]:
    intervals = [up(f"n{i:02d}", ms(1), None) for i in (0, *range(4, 31))]
    intervals += node_with_outage("n01", ms(10, 10), ms(10, 13))  # 3 h, counted
    intervals += node_with_outage("n02", ms(12, 8), ms(12, 8, 20))  # 20 min < 30 min grace
    intervals += node_with_outage("n03", ms(20, 6), ms(20, 18))  # on the unmonitored day
    intervals.append(up("n31", ms(3), None))  # the 32nd slot has no node for two days
    return intervals


SEPTEMBER_COVERAGE = [(ms(1), ms(20)), (ms(21), SEPTEMBER_END)]  # September 20 unmonitored


def test_worked_example_september_tiered_and_pro_rata() -> None:
    """32 committed nodes, September 2026 (30 days), grace 30 min, 2.37 USD per GPU-hour.

    - n01 broken 3 h (Sep 10 10:00-13:00): counted, shortfall 1 for 10,800 s.
    - n02 broken 20 min: shorter than the grace, forgiven whole: 0 s.
    - n03 broken 12 h on Sep 20, which is unmonitored: counted outage, 0 s of it monitored.
    - slot 32 empty Sep 1-2 (n31 first seen Sep 3): shortfall 1 for 172,800 s.
    Monitored = 29 days = 2,505,600 s; coverage = 29/30 = 96.666...%.
    Down node-seconds = 10,800 + 172,800 = 183,600.
    Availability = 100 x (1 - 183,600 / (32 x 2,505,600)) = 100 x (1 - 17/7424)
                 = 100 x 7407/7424 = 99.7710129...%.
    Tier: 99.9 > 99.771 → 10 %; 99.0 and 95 are not above it.
    Bill = 32 x 8 x 2.37 x 720 h = 436,838.40; tiered credit = 10 % = 43,683.84.
    Pro rata = 183,600 / 3600 = 51 h x 8 GPUs x 2.37 = 966.96.
    """
    period = month_period("2026-09", now_ms=ms(5, month=10))
    result = compute_sla(contract(), period, SEPTEMBER_COVERAGE, september_fleet(), ms(5, month=10))

    assert result.monitored_ms == 2_505_600_000
    assert result.coverage_pct == Fraction(290, 3)
    assert result.down_node_ms == 183_600_000
    assert result.availability_pct == Fraction(100 * 7407, 7424)
    assert result.tier_credit_pct == Decimal(10)
    assert result.bill == Decimal("436838.40")
    assert result.tiered_credit == Decimal("43683.84")
    assert result.pro_rata_credit == Decimal("966.96")
    assert result.owed == Decimal("43683.84")
    counted = {(o.node, o.minutes) for o in result.outages if o.counted}
    forgiven = {(o.node, o.minutes) for o in result.outages if not o.counted}
    assert counted == {("n01", 180.0), ("n03", 720.0)}
    assert forgiven == {("n02", 20.0)}


def test_pro_rata_model_owes_the_lost_gpu_hours() -> None:
    """Same fleet under ``credit_model = "pro_rata"``: owed = 966.96 (see the example above)."""
    period = month_period("2026-09", now_ms=SEPTEMBER_END)
    result = compute_sla(
        contract(credit_model="pro_rata"),
        period,
        SEPTEMBER_COVERAGE,
        september_fleet(),
        ms(5, 0, 0, 10),
    )
    assert result.owed == Decimal("966.96")


def test_a_spare_node_covers_a_broken_one() -> None:
    """33 nodes for 32 slots, one broken 3 h: usable never drops below 32, so 100 %, no credit."""
    intervals = [up(f"n{i:02d}", ms(1), None) for i in range(1, 33)]
    intervals += node_with_outage("n00", ms(10, 10), ms(10, 13))
    period = month_period("2026-09", now_ms=SEPTEMBER_END)
    result = compute_sla(contract(), period, [(ms(1), SEPTEMBER_END)], intervals, SEPTEMBER_END)
    assert result.availability_pct == 100
    assert result.owed == Decimal("0.00")
    assert [o.counted for o in result.outages] == [True]


def test_an_outage_exactly_as_long_as_the_grace_counts() -> None:
    """2 slots, 1 day monitored; n1 broken exactly 30 min under a 30-minute grace.

    Down = 1,800 s of 2 x 86,400 node-seconds: availability = 100 x (1 - 1800/172800)
    = 100 x 95/96 = 98.958333...%.
    """
    intervals = [up("n0", ms(1), None), *node_with_outage("n1", ms(1, 5), ms(1, 5, 30))]
    period = month_period("2026-09", now_ms=ms(2))
    result = compute_sla(contract(committed_nodes=2), period, [(ms(1), ms(2))], intervals, ms(2))
    assert result.availability_pct == Fraction(100 * 95, 96)
    assert result.tier_credit_pct == Decimal(25)


def test_unreachable_counts_only_when_the_contract_says_so() -> None:
    """1 slot, 1 day monitored, the node unreachable 6 h: 75 % when counted, 100 % when not."""
    intervals = [
        up("n0", ms(1), ms(1, 6)),
        StateInterval("n0", "unreachable", ms(1, 6), ms(1, 12), ("timeout",)),
        up("n0", ms(1, 12), None),
    ]
    period = month_period("2026-09", now_ms=ms(2))
    counted = compute_sla(contract(committed_nodes=1), period, [(ms(1), ms(2))], intervals, ms(2))
    ignored = compute_sla(
        contract(committed_nodes=1, unreachable_counts_as_down=False),
        period,
        [(ms(1), ms(2))],
        intervals,
        ms(2),
    )
    assert counted.availability_pct == 75
    assert ignored.availability_pct == 100


def test_nothing_monitored_means_no_availability_and_no_credit() -> None:
    period = month_period("2026-09", now_ms=SEPTEMBER_END)
    result = compute_sla(contract(), period, [], september_fleet(), SEPTEMBER_END)
    assert result.availability_pct is None
    assert result.coverage_pct == 0
    assert result.owed == Decimal("0.00")


def test_an_ongoing_outage_under_the_grace_is_forgiven_for_now() -> None:
    """Month to date: n1 broken for the last 10 minutes (grace 30): forgiven, still ongoing."""
    now = ms(1, 12)
    intervals = [
        up("n0", ms(1), None),
        up("n1", ms(1), ms(1, 11, 50)),
        broken("n1", ms(1, 11, 50), None),
    ]
    period = month_period("2026-09", now_ms=now)
    result = compute_sla(contract(committed_nodes=2), period, [(ms(1), now)], intervals, now)
    assert result.availability_pct == 100
    assert [(o.ongoing, o.counted) for o in result.outages] == [(True, False)]
