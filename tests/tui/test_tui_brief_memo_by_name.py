"""BriefMemo keyed by node name: an answer is reused only for the very briefs it was
worked out from (not another node of the same name), and dropped once a tick passes
without the node being asked for."""

from __future__ import annotations

from collections import Counter

from bench.lib.fleet_states import state_ticks
from fleet.facade import NodeSnapshot
from testkit.snapshots import T0
from tui.brief_memo import BriefMemo
from tui.fleet_digest import NodePart, node_part


def _counting() -> tuple[Counter[str], BriefMemo[NodePart]]:
    worked: Counter[str] = Counter()

    def counted(node: NodeSnapshot) -> NodePart:
        worked[node.name] += 1
        return node_part(node)

    return worked, BriefMemo(counted, ports=True)


def test_a_node_left_out_for_a_tick_is_worked_out_again() -> None:
    worked, memo = _counting()
    first, second, third = state_ticks(3, 3, t0=T0)[:3]
    memo.next_tick()
    for n in first.nodes:
        memo.get(n)
    memo.next_tick()
    memo.get(second.nodes[0])  # node 1 and 2 not asked for in this tick
    memo.next_tick()
    worked.clear()
    for n in third.nodes:
        memo.get(n)
    assert set(worked) == {third.nodes[1].name, third.nodes[2].name}


def test_a_node_of_the_same_name_with_other_briefs_is_worked_out_again() -> None:
    worked, memo = _counting()
    node = state_ticks(1, 1, t0=T0)[0].nodes[0]
    memo.next_tick()
    memo.get(node)
    copy = NodeSnapshot(**{f: getattr(node, f) for f in ("name", "state", "status")})
    worked.clear()
    memo.get(copy)
    assert worked == Counter({node.name: 1})
