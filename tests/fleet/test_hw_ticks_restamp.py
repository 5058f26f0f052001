"""A slow tick whose port hw counters move, and nothing a rule reads, judges no node.

No health rule reads a port's hw counters (mlx5 / EFA ``hw_counters``: data and
congestion counts); the port rules read the sysfs counters' rates, state and rate. So
a slow tick that brings hw counters keeps the node's last judgement and shows the new
counters, as a quiet tick of GPU slow rows does. The reference object state
(tests/fleet/reference) judges every node on every tick: each tick's snapshots and
/metrics text (raw port counters on) must be the same as its, over port errors, links
going down and coming back, counters that reset or peg, hw counters that move, stay,
reset or change names, new sessions and dropped connections.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.agent.fields import GPU_SLOW_FIELDS, PORT_FIELDS, PROTOCOL_VERSION
from collectors.protocol import Event, Sample
from collectors.updates import NodeStatusChange, NodeUpdate
from exporter.text import render_exposition
from fleet.model import FleetSnapshot
from fleet.state import FleetState
from tests.fleet.reference.fleet import FleetState as ReferenceState
from tests.fleet.test_columnar_oracle import (
    COUNTERS,
    _apply_change,
    _same,
    _wire,
    counter_change,
    ingest_both,
    snapshots_of_both,
    started_states,
)
from tests.fleet.test_gpu_ingest_oracle import LinkNode

MLX5 = ("out_of_buffer", "np_cnp_sent", "rp_cnp_handled", "req_cqe_error")
SYMBOL_ERROR = PORT_FIELDS.index("symbol_error")
LINK_DOWNED = PORT_FIELDS.index("link_downed")
ECC_UNC = GPU_SLOW_FIELDS.index("ecc_unc_vol")

States = tuple[FleetState, ReferenceState]


class HwNode(LinkNode):
    """A made-up node whose slow samples carry each port's hw counters, as set."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.hw: list[dict[str, int]] = [
            {counter: 1_000 * i + k for k, counter in enumerate(MLX5)}
            for i in range(len(self.ports))
        ]

    def sample(self, advance: float, slow: bool, short: bool) -> Sample:
        base = super().sample(advance, slow, short)
        return Sample(
            v=base.v, t=base.t, seq=base.seq, gpus=base.gpus, ports=base.ports,
            nics=base.nics, lost=base.lost, errs=base.errs, slow=base.slow,
            links=base.links, hw=[dict(counters) for counters in self.hw] if slow else None,
        )  # fmt: skip

    def move_hw(self, step: int) -> None:
        """Data counters climb, as they do on a busy port every slow tick."""
        for counters in self.hw:
            for name in counters:
                counters[name] += step


def _fleet() -> tuple[dict[str, HwNode], States]:
    nodes = {name: HwNode(name) for name in ("a", "b")}
    return nodes, started_states(dict(nodes))


def _same_with_metrics(mine: FleetSnapshot, theirs: FleetSnapshot) -> None:
    _same(mine, theirs)
    texts = [render_exposition(s, raw_port_counters=True) for s in (mine, theirs)]
    assert texts[0] == texts[1]


def _tick(states: States, nodes: dict[str, HwNode], *, slow: bool) -> FleetSnapshot:
    """Every node sends a sample one second on; both snapshots must agree."""
    for name, node in nodes.items():
        ingest_both(states, [_wire(name, node.sample(1.0, slow, False), node.t + 0.01)])
    mine, theirs = snapshots_of_both(states, dict(nodes))
    _same_with_metrics(mine, theirs)
    return mine


def _warm(states: States, nodes: dict[str, HwNode]) -> None:
    # Rates are known on the second reading; slow counters quiet from the third slow tick.
    for k in range(13):
        if k % 4 == 0:
            for node in nodes.values():
                node.move_hw(7)
        _tick(states, nodes, slow=k % 4 == 0)


def test_a_slow_tick_whose_hw_counters_move_judges_no_node_and_shows_them() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    for moving in nodes.values():
        moving.move_hw(1_000_003)
    snapshot = _tick(states, nodes, slow=True)
    assert (states[0].judged, states[0].restamped) == (0, 2)
    node = snapshot.node("a")
    assert node is not None
    counters = dict(node.ports[1].counters)
    assert counters["np_cnp_sent"] == nodes["a"].hw[1]["np_cnp_sent"]
    metrics = render_exposition(snapshot, raw_port_counters=True).decode()
    assert 'counter="np_cnp_sent"' in metrics and str(nodes["a"].hw[1]["np_cnp_sent"]) in metrics


def test_a_slow_tick_whose_hw_counters_stay_judges_no_node() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    before = states[0].snapshot(nodes["a"].t + 0.5).node("a")
    snapshot = _tick(states, nodes, slow=True)
    assert states[0].judged == 0
    node = snapshot.node("a")
    assert before is not None and node is not None
    assert node.port_briefs is before.port_briefs  # readers skip unchanged ports by it


def test_a_port_error_on_a_slow_tick_judges_that_node_on_that_tick() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    nodes["b"].move_hw(5)
    nodes["b"].ports[1][LINK_DOWNED] = 1  # a fatal counter: the port fails for a while
    snapshot = _tick(states, nodes, slow=True)
    assert states[0].judged == 1
    node = snapshot.node("b")
    assert node is not None and node.ports[1].verdict == "fail"
    _tick(states, nodes, slow=True)
    assert states[0].judged == 0  # the fail holds; the hw counters move nothing


def test_a_gpu_fact_on_a_slow_tick_with_hw_counters_judges_that_node() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    nodes["a"].slow[0][ECC_UNC] = 1
    snapshot = _tick(states, nodes, slow=True)
    assert states[0].judged == 1
    node = snapshot.node("a")
    assert node is not None and node.gpus[0].verdict == "fail"


def _move_hw(data: st.DataObject, node: HwNode) -> None:
    draw = data.draw
    what = draw(st.sampled_from(["stay", "stay", "climb", "climb", "reset", "names", "fewer"]))
    port = draw(st.integers(0, len(node.hw) - 1))
    if what == "climb":
        node.move_hw(draw(st.integers(1, 1 << 40)))
    elif what == "reset":  # a driver reload: counts start again at 0
        node.hw[port] = dict.fromkeys(node.hw[port], 0)
    elif what == "names":  # a firmware that lists one counter more, in another order
        node.hw[port] = {"resp_cqe_error": 3, **dict(reversed(node.hw[port].items()))}
    elif what == "fewer":  # a port that lists none
        node.hw[port] = {}


def _move_port(data: st.DataObject, node: HwNode) -> None:
    draw = data.draw
    row = node.ports[draw(st.integers(0, len(node.ports) - 1))]
    what = draw(st.sampled_from(["errors", "down", "up", "rate", "counter"]))
    if what == "errors":
        row[SYMBOL_ERROR] = int(row[SYMBOL_ERROR] or 0) + draw(st.integers(1, 500))
    elif what == "down":
        row[0], row[1] = 1, draw(st.sampled_from([2, 3]))  # DOWN, Polling or Disabled
    elif what == "up":
        row[0], row[1] = 4, 5
    elif what == "rate":
        row[2] = draw(st.sampled_from([400.0, 200.0]))
    else:  # climbs, resets, pegs or goes missing
        at, change = draw(counter_change(COUNTERS, 3))
        _apply_change(row, at, change)  # type: ignore[arg-type]  # (kind, value), as drawn


def _step(data: st.DataObject, nodes: dict[str, HwNode]) -> list[NodeUpdate]:
    draw = data.draw
    node = nodes[draw(st.sampled_from(sorted(nodes)))]
    action = draw(st.sampled_from(["slow"] * 10 + ["fast"] * 3 + ["hello", "drop", "xid"]))
    if action == "hello":
        node.sent_full = False
        return [_wire(node.name, node.hello(), node.t)]
    if action == "drop":
        down = NodeStatusChange(node.name, "unreachable", "reset by peer", node.t, True)
        return [down, NodeStatusChange(node.name, "streaming", "", node.t)]
    if action == "xid":
        gpu = draw(st.integers(0, len(node.fast) - 1))
        event = Event(PROTOCOL_VERSION, node.t, "xid", gpu, f"GPU-{node.name}-{gpu}", 13, "")
        return [_wire(node.name, event, node.t)]
    if draw(st.integers(0, 3)) == 0:
        _move_port(data, node)
    if draw(st.integers(0, 9)) == 0:
        gpu = draw(st.integers(0, len(node.slow) - 1))
        node.slow[gpu][ECC_UNC] = draw(st.integers(0, 2))
    slow = action == "slow"
    if slow:
        _move_hw(data, node)
    advance = draw(st.sampled_from([1.0, 1.0, 1.0, 10.0, 0.0]))
    return [_wire(node.name, node.sample(advance, slow, False), node.t + 0.01)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_slow_ticks_with_hw_counters_give_the_object_states_snapshots_and_metrics(
    data: st.DataObject,
) -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    kept: list[tuple[FleetSnapshot, FleetSnapshot]] = []
    for _ in range(data.draw(st.integers(5, 30))):
        ingest_both(states, _step(data, nodes))
        kept.append(snapshots_of_both(states, dict(nodes)))
    for mine, theirs in kept:  # read late: later ingests must not have reached them
        _same_with_metrics(mine, theirs)
