"""The fleet-wide panels work out a node's part again only when its briefs changed, and
answer what they answer without the memo."""

from __future__ import annotations

import json
from collections import Counter

from bench.fleet_states import state_ticks
from fleet.facade import NodeSnapshot
from testkit.snapshots import T0
from tui.brief_memo import BriefMemo
from tui.header_view import gpu_counts, header_tiles
from tui.panels import failed_gpus, link_issue_lines, node_failed_gpus, node_link_trouble

PORT_STATE, DOWN = 0, 1


def _faults_at_tick_3(line: bytes, node: int, tick: int) -> bytes:
    sample = json.loads(line)
    if tick >= 3 and node == 2:
        sample["gpus"][1] = None  # GPU 1 of node-003 stops answering
    if tick >= 3 and node == 4:
        sample["ports"][2][PORT_STATE] = DOWN  # a port of node-005 goes down
    return json.dumps(sample).encode() + b"\n"


def test_panels_with_the_memo_equal_the_panels_without_it() -> None:
    worked: Counter[str] = Counter()

    def counted_trouble(node: NodeSnapshot) -> tuple[bool, bool]:
        worked[node.name] += 1
        return node_link_trouble(node)

    links = BriefMemo(counted_trouble, ports=True)
    failed = BriefMemo(node_failed_gpus)
    counts = BriefMemo(gpu_counts)
    for tick, snap in enumerate(state_ticks(8, 4, _faults_at_tick_3, t0=T0), start=1):
        worked.clear()
        for memo in (links, failed, counts):
            memo.next_tick()
        assert link_issue_lines(snap, 50, links) == link_issue_lines(snap, 50)
        assert failed_gpus(snap, failed) == failed_gpus(snap)
        assert header_tiles(snap, memo=counts) == header_tiles(snap)
        if tick == 3:  # the two nodes whose facts changed are scanned again, no other
            assert set(worked) == {"node-003", "node-005"}
            assert any("node-005" in line and "DOWN" in line for line in link_issue_lines(snap))
            assert [(r.node, r.index) for r in failed_gpus(snap, failed)] == [("node-003", 1)]
        if tick == 4:
            assert not worked  # nothing changed in any node's facts
