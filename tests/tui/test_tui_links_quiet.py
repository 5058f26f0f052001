"""Start-up and silence in words: the Interconnect panel never says "all links up" while
a node has not reported; the node screen calls start-up connecting."""

from __future__ import annotations

from dataclasses import replace

from testkit.snapshots import connecting, demo_snapshot
from tui.node_tables import node_summary
from tui.panels import ALL_LINKS_UP, NO_LINK_DATA, quiet_links_text


def test_all_links_up_only_when_every_node_reports() -> None:
    snap = demo_snapshot(4, faults=False)
    assert quiet_links_text(snap) == ALL_LINKS_UP
    one_silent = replace(snap, nodes=(connecting(snap.nodes[0]), *snap.nodes[1:]))
    text = quiet_links_text(one_silent)
    assert "all links up" not in text
    assert "links up on 3 reporting node(s)" in text
    assert "1 node(s) not reported yet" in text
    none_yet = replace(snap, nodes=tuple(connecting(n) for n in snap.nodes))
    assert quiet_links_text(none_yet) == NO_LINK_DATA


def test_the_node_screen_calls_start_up_connecting() -> None:
    node = connecting(demo_snapshot(1, faults=False).nodes[0])
    line = node_summary(node, node.last_seen or 0.0)
    assert "connecting since" in line and "UNREACHABLE" not in line
