"""Down, unmonitored and disputed kept apart, on hand-made days (docs/sla.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

from history.ledger import LedgerInputs
from history.states import StateInterval
from ledger.sla import compute_sla, month_period
from ledger.sla.section import SlaSection


def ms(hour: int, minute: int = 0, second: int = 0) -> int:
    return int(datetime(2026, 9, 1, hour, minute, second, tzinfo=UTC).timestamp()) * 1000


DAY = [(ms(0), ms(0) + 86_400_000)]
PERIOD = month_period("2026-09", now_ms=ms(0) + 86_400_000)
HOUR = 3_600_000


def test_nodes_lost_within_a_minute_are_disputed_and_an_earlier_outage_is_not() -> None:
    """n1-n3 lost at 10:00:00, :20 and :50 for an hour (3 of 4 nodes within a minute):
    disputed. n0 lost from 08:00 to 12:00, long before: its own outage, counted."""
    intervals = [
        StateInterval("n0", "up", ms(0), ms(8)),
        StateInterval("n0", "unreachable", ms(8), ms(12), ("connection refused",)),
        StateInterval("n0", "up", ms(12), None),
    ]
    for n, second in ((1, 0), (2, 20), (3, 50)):
        intervals += [
            StateInterval(f"n{n}", "up", ms(0), ms(10, 0, second)),
            StateInterval(f"n{n}", "unreachable", ms(10, 0, second), ms(11, 0, second)),
            StateInterval(f"n{n}", "up", ms(11, 0, second), None),
        ]
    contract = SlaSection(committed_nodes=4)
    r = compute_sla(contract, PERIOD, DAY, intervals, DAY[0][1])
    assert [o.node for o in r.outages] == ["n0"] and r.down_node_ms == 4 * HOUR
    assert sorted(o.node for o in r.disputed) == ["n1", "n2", "n3"]
    assert r.disputed_ms == 3 * HOUR
    assert r.availability_pct == 100 * (1 - Fraction(4 * HOUR, 4 * 24 * HOUR - 3 * HOUR))
    counted = compute_sla(
        contract.model_copy(update={"disputed_counts_as_down": True}),
        PERIOD, DAY, intervals, DAY[0][1],
    )  # fmt: skip
    assert counted.down_node_ms == 7 * HOUR and counted.disputed_ms == 0


def test_connecting_time_is_unmonitored_and_leaves_the_denominator() -> None:
    """n1's controller took 2 minutes to connect: no downtime, 2 node-minutes unknown,
    n1's coverage lower than n0's."""
    intervals = [
        StateInterval("n0", "up", ms(0), None),
        StateInterval("n1", "unmonitored", ms(0), ms(0, 2), ("connecting: no sample yet",)),
        StateInterval("n1", "up", ms(0, 2), None),
    ]
    r = compute_sla(SlaSection(committed_nodes=2), PERIOD, DAY, intervals, DAY[0][1])
    assert r.down_node_ms == 0 and r.availability_pct == 100
    assert r.unmonitored_ms == 120_000
    assert r.node_coverage["n1"] == Fraction(
        100 * (86_400_000 - 120_000), PERIOD.end_ms - PERIOD.start_ms
    )
    assert r.node_coverage["n0"] == 100


def test_an_open_interval_of_a_stopped_history_ends_at_the_last_observation() -> None:
    intervals = [
        StateInterval("n0", "up", ms(0), ms(6)),
        StateInterval("n0", "broken", ms(6), None, ("GPU 3: xid 79",)),
    ]
    coverage = [(ms(0), ms(7))]
    stopped = LedgerInputs(coverage, intervals, live=False, observed_until_ms=ms(7))
    live = LedgerInputs(coverage, intervals, live=True, observed_until_ms=ms(7))
    a = compute_sla(SlaSection(committed_nodes=1), PERIOD, stopped, now_ms=ms(20))
    b = compute_sla(SlaSection(committed_nodes=1), PERIOD, live, now_ms=ms(20))
    ((o_stopped,), (o_live,)) = (a.outages, b.outages)
    assert (o_stopped.end_ms, o_stopped.ongoing) == (ms(7), False)
    assert (o_live.end_ms, o_live.ongoing) == (ms(20), True)
