"""A restamped node is its last snapshot with new times and rows, every other field kept."""

from __future__ import annotations

from dataclasses import fields

from fleet.model import NodeSnapshot, evolve, restamped_node
from tests.fleet.feed import NodeFeed, started_fleet


def test_a_restamped_node_is_the_node_evolved_with_its_times_and_rows() -> None:
    feed = NodeFeed("gpu-001", gpus=2)
    state = started_fleet(feed)
    node = state.snapshot(feed.t + 0.5).nodes[0]
    assert node.rows is not None and node.last_seen is not None and node.driver and node.gpus
    seen = node.last_seen + 1.0
    copy = restamped_node(node, seen, 123.0, node.rows)
    same = evolve(node, last_seen=seen, sampled_at=123.0, rows=node.rows)
    assert type(copy) is NodeSnapshot
    for f in fields(NodeSnapshot):
        assert getattr(copy, f.name) == getattr(same, f.name), f.name
    assert copy.last_seen == seen and copy.sampled_at == 123.0
    assert copy.name is node.name and copy.broken_reasons is node.broken_reasons
    assert copy == same
