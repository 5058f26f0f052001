"""A restamped node keeps only this tick's decoded port rows, not its last refresh's too.

A node whose judgement holds takes its last snapshot's port briefs and hw counters with
this tick's rows (``fleet.state.restamp``). The rows of the tick it was last judged on
(one decoded port row per port, per node) must not stay reachable from the state or
its snapshot until the next judgement: at 1,000 nodes that was a second tick's rows.
"""

from __future__ import annotations

import gc
import types

from tests.fleet.test_restamp import CLOCK, HW_THERMAL, _fleet, _tick, _warm

_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def _reaches(root: object, target: object) -> bool:
    """Whether ``target`` is reachable from ``root`` through data (no types or modules)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if obj is target:
            return True
        if id(obj) in seen or isinstance(obj, _NOT_DATA):
            continue
        seen.add(id(obj))
        stack.extend(gc.get_referents(obj))
    return False


def test_a_restamped_node_no_longer_holds_the_port_rows_it_was_judged_with() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    nodes["a"].fast[1] = [*nodes["a"].fast[1][:CLOCK], HW_THERMAL, 0]
    _tick(states, nodes)
    assert states[0].judged == 1  # node a judged on this tick
    track = next(node for node in states[0]._order if node.spec.name == "a")
    judged_ports, judged_nics = (track.port_rows[id(t)].rows for t in (track.ports, track.nics))
    assert judged_ports and judged_nics
    snapshot = _tick(states, nodes)
    assert states[0].restamped == 2  # readings only: both nodes restamped
    node = snapshot.node("a")
    assert node is not None
    assert node.ports[0].counters[-1][1] == nodes["a"].ports[0][-1]  # this tick's
    for old in (judged_ports, judged_nics):
        assert not _reaches(states[0], old)
        assert not _reaches(snapshot, old)
