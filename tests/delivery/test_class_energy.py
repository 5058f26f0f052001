"""A minute's energy shared among the classes its time went to."""

from __future__ import annotations

from ledger.delivery.class_energy import minute_parts
from ledger.delivery.classes import NodeSpans

# The minute [60 s, 120 s): blind its first 15 s, broken the next 15 s, observed after.
SPANS = NodeSpans(blind=[(0, 75_000)], broken=[(75_000, 90_000)], observed=[(90_000, 600_000)])


def test_a_cut_minute_is_shared_by_milliseconds() -> None:
    assert minute_parts(60_000, 1_000, SPANS, "working") == [
        ("unmonitored", 250),
        ("broken", 250),
        ("working", 500),
    ]


def test_the_last_part_takes_the_rounding_so_nothing_is_lost() -> None:
    parts = minute_parts(60_000, 1_003, SPANS, "idle")
    assert parts == [("unmonitored", 250), ("broken", 250), ("idle", 503)]
    assert sum(mj for _, mj in parts) == 1_003


def test_a_wholly_observed_minute_is_its_judged_class() -> None:
    assert minute_parts(120_000, 1_000, SPANS, "provider") == [("provider", 1_000)]


def test_an_observed_minute_nobody_judged_and_a_node_without_states() -> None:
    assert minute_parts(120_000, 7, SPANS, None) == [("broken", 7)]
    assert minute_parts(120_000, 7, None, "working") == [("unmonitored", 7)]
