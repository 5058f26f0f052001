"""A node whose judgement holds is restamped, not judged, and shows what judging showed.

``fleet.state.restamp`` hands a node its last snapshot with the tick's times and rows
when nothing but readings moved; ``fleet.state.slow_ingest`` takes a slow tick that
moved no health fact per node. The reference object state (tests/fleet/reference)
judges every node on every tick: each tick's snapshots must equal its snapshots, and a
node whose verdict changes, or that goes silent, must change on the very same tick.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.agent.fields import GPU_FIELDS, GPU_SLOW_FIELDS, PROTOCOL_VERSION
from collectors.protocol import Event
from collectors.updates import NodeStatusChange
from fleet.model import FleetSnapshot
from fleet.state import FleetState
from tests.fleet.reference.fleet import FleetState as ReferenceState
from tests.fleet.test_columnar_oracle import (
    _same,
    _wire,
    ingest_both,
    snapshots_of_both,
    started_states,
)
from tests.fleet.test_gpu_ingest_oracle import LinkNode

CLOCK = GPU_FIELDS.index("clock_reasons")
PCIE_REPLAY = GPU_SLOW_FIELDS.index("pcie_replay")
NVLINK_REPLAY = GPU_SLOW_FIELDS.index("nvlink_replay")
CRC_FLIT = GPU_SLOW_FIELDS.index("nvlink_crc_flit")
HW_THERMAL = 0x40

States = tuple[FleetState, ReferenceState]


def _fleet() -> tuple[dict[str, LinkNode], States]:
    nodes = {name: LinkNode(name) for name in ("a", "b")}
    return nodes, started_states(dict(nodes))


def _tick(
    states: States, nodes: dict[str, LinkNode], *, slow: bool = False, silent: str = ""
) -> FleetSnapshot:
    """Every node but ``silent`` sends a sample one second on; both snapshots must agree."""
    for name, node in nodes.items():
        if name == silent:
            node.t += 1.0
            continue
        for port in node.ports:  # traffic moves every tick; error counters do not
            port[-1] = int(port[-1] or 0) + 4_000
        node.fast[0] = [(node.seq * 7) % 100, *node.fast[0][1:]]
        ingest_both(states, [_wire(name, node.sample(1.0, slow, False), node.t + 0.01)])
    mine, theirs = snapshots_of_both(states, dict(nodes))
    _same(mine, theirs)
    return mine


def _warm(states: States, nodes: dict[str, LinkNode]) -> None:
    # Rates become known on the second reading, NVLink rates on the second slow tick.
    for k in range(12):
        _tick(states, nodes, slow=k % 4 == 0)


def test_a_tick_of_readings_only_judges_no_node_and_shows_the_new_readings() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    before = states[0].snapshot(nodes["a"].t + 0.5)
    after = _tick(states, nodes)
    assert (states[0].judged, states[0].restamped) == (0, 2)
    node = after.node("a")
    assert node is not None and node.last_seen == nodes["a"].t + 0.01
    assert node.gpu_briefs is before.nodes[0].gpu_briefs  # nothing judged, nothing new
    assert node.gpus[0].util_gpu == nodes["a"].fast[0][0]


def test_a_verdict_that_changes_after_quiet_ticks_changes_on_that_tick() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    nodes["a"].fast[1] = [*nodes["a"].fast[1][:CLOCK], HW_THERMAL, 0]
    snapshot = _tick(states, nodes)  # equal to the reference's, which judges every tick
    assert states[0].judged == 1
    node = snapshot.node("a")
    assert node is not None and node.gpus[1].verdict == "warn"
    _tick(states, nodes)
    assert states[0].judged == 0  # judged once; the warn holds while nothing moves


def test_a_node_going_silent_turns_stale_then_unreachable_on_the_reference_ticks() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    seen = []
    for _ in range(40):  # past stale_unreachable_s (30 s by default)
        snapshot = _tick(states, nodes, silent="b")
        node = snapshot.node("b")
        assert node is not None
        seen.append((node.status, node.state))
    assert seen[0] == ("streaming", "up")
    assert ("stale", "up") in seen and seen[-1] == ("stale", "unreachable")
    for _ in range(3):  # it comes back: judged again on the tick of its first sample
        snapshot = _tick(states, nodes)
    node = snapshot.node("b")
    assert node is not None and (node.status, node.state) == ("streaming", "up")


def test_a_slow_tick_that_moves_no_fact_shows_its_readings_and_judges_no_node() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    for row in nodes["a"].slow:
        row[PCIE_REPLAY] = 17  # a reading no rule reads
    snapshot = _tick(states, nodes, slow=True)
    assert states[0].judged == 0
    node = snapshot.node("a")
    assert node is not None and [g.pcie_replay for g in node.gpus] == [17] * len(node.gpus)
    assert node.gpus[0].nvlink_replay_delta == 0 and node.gpus[0].nvlink_crc_rate == 0.0


def test_an_nvlink_replay_after_quiet_slow_ticks_fails_the_gpu_on_that_tick() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    _tick(states, nodes, slow=True)
    nodes["b"].slow[0][NVLINK_REPLAY] = 3
    snapshot = _tick(states, nodes, slow=True)
    assert states[0].judged == 1
    node = snapshot.node("b")
    assert node is not None and node.gpus[0].verdict == "fail"
    assert node.gpus[0].nvlink_replay_delta == 3


def test_an_event_between_quiet_ticks_is_judged_on_the_next_tick() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    event = Event(PROTOCOL_VERSION, nodes["a"].t, "xid", 0, "GPU-a-0", 79, "")
    ingest_both(states, [_wire("a", event, nodes["a"].t)])
    snapshot = _tick(states, nodes)
    node = snapshot.node("a")
    assert node is not None and node.gpus[0].verdict == "fail" and node.state == "broken"


def test_an_uncorrected_ecc_error_after_quiet_slow_ticks_fails_the_gpu_on_that_tick() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    _tick(states, nodes, slow=True)
    nodes["a"].slow[1][GPU_SLOW_FIELDS.index("ecc_unc_vol")] = 1
    snapshot = _tick(states, nodes, slow=True)
    assert states[0].judged == 1
    node = snapshot.node("a")
    assert node is not None and node.gpus[1].verdict == "fail"


def test_crc_errors_after_quiet_slow_ticks_show_their_rate_on_that_tick() -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    _tick(states, nodes, slow=True)
    nodes["b"].slow[0][CRC_FLIT] = 600  # the GPU's sum over links: no rule reads the row
    snapshot = _tick(states, nodes, slow=True)
    node = snapshot.node("b")
    assert node is not None and node.gpus[0].nvlink_crc_rate == 600.0  # a second after


def _disturb(draw: st.DrawFn, states: States, node: LinkNode) -> None:
    """One change among quiet ticks: a reading a rule reads, an event, a session."""
    what = draw(st.sampled_from(["clock", "ecc", "crc", "replay", "port", "xid", "hello", "drop"]))
    gpu = draw(st.integers(0, len(node.fast) - 1))
    if what == "clock":
        node.fast[gpu] = [*node.fast[gpu][:CLOCK], draw(st.sampled_from([0, HW_THERMAL])), 0]
    elif what in ("ecc", "crc", "replay"):
        field = {"ecc": "ecc_unc_vol", "crc": "nvlink_crc_flit", "replay": "nvlink_replay"}[what]
        node.slow[gpu][GPU_SLOW_FIELDS.index(field)] = draw(st.integers(0, 3))
    elif what == "port":
        node.ports[0][0] = draw(st.sampled_from([4, 1]))
    elif what == "xid":
        event = Event(PROTOCOL_VERSION, node.t, "xid", gpu, f"GPU-{node.name}-{gpu}", 13, "")
        ingest_both(states, [_wire(node.name, event, node.t)])
    elif what == "hello":
        ingest_both(states, [_wire(node.name, node.hello(), node.t)])
    else:
        change = NodeStatusChange(node.name, "unreachable", "reset", node.t, True)
        ingest_both(states, [change, NodeStatusChange(node.name, "streaming", "", node.t)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mostly_quiet_ticks_give_the_object_states_snapshots(data: st.DataObject) -> None:
    nodes, states = _fleet()
    _warm(states, nodes)
    for _ in range(data.draw(st.integers(5, 30))):
        if data.draw(st.integers(0, 3)) == 0:
            _disturb(data.draw, states, nodes[data.draw(st.sampled_from(["a", "b"]))])
        silent = data.draw(st.sampled_from(["", "", "", "b"]))
        _tick(states, nodes, slow=data.draw(st.integers(0, 3)) == 0, silent=silent)
