"""KeptCopies: equal values share the first copy; the table stays bounded."""

from __future__ import annotations

from fleet.state.kept import KeptCopies
from tests.fleet.feed import NodeFeed, started_fleet


def test_equal_values_get_the_first_copy_and_unequal_ones_their_own() -> None:
    kept: KeptCopies[tuple[float, ...]] = KeptCopies(8)
    a, b = tuple([0.0, 1.5]), tuple([0.0, 1.5])  # built at run time: two objects
    assert a is not b
    assert kept.one(a) is a
    assert kept.one(b) is a
    other = tuple([0.0, 2.5])
    assert kept.one(other) is other


def test_a_full_table_starts_again_and_what_it_handed_out_stays_as_it_was() -> None:
    kept: KeptCopies[tuple[int, ...]] = KeptCopies(4)
    handed = [kept.one((k,)) for k in range(10)]
    assert len(kept) <= 4
    assert handed == [(k,) for k in range(10)]


def test_healthy_gpus_of_two_nodes_keep_one_copy_of_their_slow_facts() -> None:
    state = started_fleet(NodeFeed("gpu-001"), NodeFeed("gpu-002"))
    one, two = state._nodes["gpu-001"], state._nodes["gpu-002"]
    assert one.slow_facts is not None and two.slow_facts is not None
    assert one.slow_counts is not None and two.slow_counts is not None
    assert all(f is one.slow_facts[0] for f in (*one.slow_facts, *two.slow_facts))
    assert all(c is one.slow_counts[0] for c in (*one.slow_counts, *two.slow_counts))
