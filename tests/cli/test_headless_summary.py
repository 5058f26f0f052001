"""The headless demo's line per tick counts connecting nodes apart from broken ones."""

from __future__ import annotations

from dataclasses import replace

from gpufleet.commands.demo import summary_line
from testkit.snapshots import connecting, demo_snapshot


def test_connecting_nodes_are_not_counted_broken() -> None:
    snapshot = demo_snapshot(4)
    nodes = (connecting(snapshot.nodes[0]), connecting(snapshot.nodes[1]), *snapshot.nodes[2:])
    line = summary_line(replace(snapshot, nodes=nodes))
    broken = [n.name for n in snapshot.nodes[2:] if n.broken]
    assert f"2 connecting, {len(broken)} broken" in line, line
    assert "node-0001" not in line and "node-0002" not in line
