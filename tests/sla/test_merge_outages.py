"""``merge_outages_within_seconds``: a flapping link is one outage, not many forgiven ones."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction

from history.states import StateInterval
from ledger.sla import compute_sla, month_period
from ledger.sla.section import SlaSection, SlaTier


def ms(day: int, hour: int = 0, minute: int = 0) -> int:
    return int(datetime(2026, 9, day, hour, minute, tzinfo=UTC).timestamp()) * 1000


def flapping(node: str) -> list[StateInterval]:
    """Down 3 min every 20 min, six times from 05:00 (last down 06:40-06:43), else up."""
    rows = [StateInterval(node, "up", ms(1), ms(1, 5))]
    for k in range(6):
        down = ms(1, 5) + k * 1_200_000
        rows.append(StateInterval(node, "broken", down, down + 180_000, ("ib0 link down",)))
        rows.append(StateInterval(node, "up", down + 180_000, None if k == 5 else down + 1_200_000))
    return rows


def contract(merge: float) -> SlaSection:
    return SlaSection.model_validate({
        "committed_nodes": 2, "grace_minutes": 30, "merge_outages_within_seconds": merge,
        "tiers": (SlaTier(below=Decimal("99.5"), credit_percent=Decimal(10)),),
    })  # fmt: skip


def judge(merge: float):  # type: ignore[no-untyped-def]
    intervals = [StateInterval("n0", "up", ms(1), None), *flapping("n1")]
    period = month_period("2026-09", now_ms=ms(2))
    return compute_sla(contract(merge), period, [(ms(1), ms(2))], intervals, ms(2))


def test_without_merging_every_flap_is_under_the_grace_and_forgiven() -> None:
    result = judge(0)
    assert [o.counted for o in result.outages] == [False] * 6
    assert result.availability_pct == 100


def test_flaps_closer_than_the_merge_window_are_one_counted_outage() -> None:
    """Recoveries last 17 min, within 20 min: one outage 05:00-06:43 (103 min, over the
    30-min grace), counted. Only its 6 x 3 min = 1,080 s are down, the recoveries up:
    availability = 100 x (1 - 1080 / (2 x 86400)) = 100 x (1 - 1/160) = 99.375 %,
    below 99.5: the 10 % tier."""
    result = judge(1200)
    (outage,) = result.outages
    assert (outage.start_ms, outage.end_ms) == (ms(1, 5), ms(1, 6, 43))
    assert outage.counted and outage.joined == 6
    assert result.availability_pct == Fraction(99375, 1000)
    assert result.tier_credit_pct == Decimal(10)


def test_a_recovery_longer_than_the_window_keeps_outages_apart() -> None:
    result = judge(1019)  # the recoveries are 1,020 s
    assert len(result.outages) == 6
