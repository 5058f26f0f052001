"""The fleet-wide readers fed by one shared pass (FleetDigest) answer what they answer
on their own, and a node's part is worked out again only when its briefs changed."""

from __future__ import annotations

import json
from collections import Counter

from bench.lib.fleet_states import state_ticks
from fleet.facade import NodeSnapshot
from testkit.snapshots import T0
from tui.brief_memo import BriefMemo
from tui.fleet_digest import FleetDigest, NodePart, node_part
from tui.grid_rows import layout_for
from tui.header_view import header_tiles
from tui.panels import failed_gpus, link_issue_lines

PORT_STATE, DOWN = 0, 1


def _faults_at_tick_3(line: bytes, node: int, tick: int) -> bytes:
    sample = json.loads(line)
    if tick >= 3 and node == 2:
        sample["gpus"][1] = None  # GPU 1 of node-003 stops answering
    if tick >= 3 and node == 4:
        sample["ports"][2][PORT_STATE] = DOWN  # a port of node-005 goes down
    return json.dumps(sample).encode() + b"\n"


def test_readers_fed_by_the_digest_equal_the_readers_on_their_own() -> None:
    digest = FleetDigest()
    for tick, snap in enumerate(state_ticks(8, 4, _faults_at_tick_3, t0=T0), start=1):
        d = digest.of(snap)
        counts = d.counts
        assert digest.of(snap).counts is counts  # one pass a snapshot: asked again, kept
        assert link_issue_lines(snap, 50, d.trouble) == link_issue_lines(snap, 50)
        assert failed_gpus(snap, d.failed) == failed_gpus(snap)
        assert header_tiles(snap, per_node=d.counts) == header_tiles(snap)
        slots = ([gpus for gpus, _, _ in d.counts], d.ports)
        assert layout_for(snap.nodes, 160, slots) == layout_for(snap.nodes, 160)
        if tick == 3:
            assert any("node-005" in line and "DOWN" in line for line in link_issue_lines(snap))
            assert [(r.node, r.index) for r in failed_gpus(snap, d.failed)] == [("node-003", 1)]


def test_a_node_is_worked_out_again_only_when_its_briefs_changed() -> None:
    worked: Counter[str] = Counter()

    def counted(node: NodeSnapshot) -> NodePart:
        worked[node.name] += 1
        return node_part(node)

    memo = BriefMemo(counted, ports=True)
    for tick, snap in enumerate(state_ticks(8, 4, _faults_at_tick_3, t0=T0), start=1):
        worked.clear()
        memo.next_tick()
        parts = [memo.get(n) for n in snap.nodes]
        assert parts == [node_part(n) for n in snap.nodes]
        if tick == 3:  # the two nodes whose facts changed, no other
            assert set(worked) == {"node-003", "node-005"}
        if tick == 4:
            assert not worked  # nothing changed in any node's facts
