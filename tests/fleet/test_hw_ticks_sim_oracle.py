"""The real agent on simulated nodes: slow ticks that judge no node show what judging showed.

Each slow tick the agent lists every port's hw counters; the state judges a node again
only where something a rule reads moved (fleet.state.node, fleet.state.restamp). Here
the agent runs in-process on simulated nodes (their clock is the agent's, so nothing
sleeps) under the port kinds of the simulator (symbol errors, a link that flaps, a
link that stays down, a degraded rate) and a GPU kind, with one node's agent exiting
and coming back in a new session. Every line goes, in time order, into three states:
this one; the same state made to judge a node on each sample that carries hw counters
(as it did before); and the reference object state, which judges every node on every
tick. After each second their snapshots and /metrics text (raw port counters on) must
be the same, and this state must have judged fewer nodes than the one judging every
slow tick.
"""

from __future__ import annotations

from pathlib import Path

from collectors.protocol import Sample, decode_line
from collectors.updates import NodeMessage, NodeStatusChange, NodeUpdate
from exporter.text import render_exposition
from fleet.model import FleetSnapshot
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.agent.sim_clock import WALL_START
from tests.fleet.reference.fleet import FleetState as ReferenceState
from tests.fleet.reference.node import NodeSpec as ReferenceSpec
from tests.fleet.test_columnar_oracle import same_nodes
from tests.fleet.test_end_to_end import agent_lines, sysfs_root  # noqa: F401 (a fixture)

NODES = ("node-001", "node-002")


def _fault(node: str, kind: str, at: str, **params: object) -> str:
    lines = ["[[fault]]", f'kind = "{kind}"', f'node = "{node}"', f'at = "{at}"']
    lines += [f"{k} = {v!r}".replace("'", '"').replace("True", "true") for k, v in params.items()]
    return "\n".join(lines) + "\n"


SCENARIO = (
    _fault("node-001", "ib_symbol_errors", "4s", port=2, until="12s", rate=30.0)
    + _fault("node-001", "ib_link_down", "7s", port=3, flap=True, down_s="3s", up_s="5s")
    + _fault("node-001", "ib_degraded_rate", "23s", port=5)
    + _fault("node-001", "thermal_slowdown", "26s", gpu=1, until="30s")
    + _fault("node-002", "ib_link_down", "12s", port=0, until="19s")
)


class JudgesEverySlowTick(FleetState):
    """This state, made to judge a node again on every sample with hw counters."""

    def ingest(self, update: NodeUpdate) -> None:
        super().ingest(update)
        if (
            isinstance(update, NodeMessage)
            and isinstance(update.message, Sample)
            and update.message.hw is not None
        ):
            self._nodes[update.node].facts_moved = True


def _session(root: Path, node: str, start: float, samples: int) -> list[tuple[float, bytes]]:
    """(node time, line) of what the agent writes in one session from ``start`` (seconds)."""
    lines = agent_lines(root / f"{node}-{start:g}", SCENARIO, samples, node, start)
    return [(decode_line(line).t, line) for line in lines]


def _timeline(root: Path) -> list[tuple[float, NodeUpdate]]:
    """Every node's updates in time order: node-001's agent exits at 17 s, back at 21 s."""
    timeline: list[tuple[float, NodeUpdate]] = []
    sessions = [("node-001", 0.0, 18), ("node-001", 21.0, 15), ("node-002", 0.0, 36)]
    for node, start, samples in sessions:
        at = WALL_START + start
        timeline.append((at - 0.02, NodeStatusChange(node, "streaming", "", at - 0.02)))
        for t, line in _session(root, node, start, samples):
            timeline.append((t, NodeMessage(node, decode_line(line), t + 0.01)))
    gone = WALL_START + 17.6
    timeline.append((gone, NodeStatusChange("node-001", "unreachable", "exited", gone, True)))
    timeline.sort(key=lambda item: item[0])  # stable: a session's lines stay in order
    return timeline


def _same(ours: FleetSnapshot, other: FleetSnapshot) -> None:
    same_nodes(ours, other)
    texts = [render_exposition(s, raw_port_counters=True) for s in (ours, other)]
    assert texts[0] == texts[1]


def test_simulated_faults_give_the_snapshots_of_states_that_judge_every_slow_tick(
    sysfs_root: Path,  # noqa: F811 (the fixture of test_end_to_end)
) -> None:
    health = HealthSection()
    ours = FleetState([NodeSpec(n) for n in NODES], health)
    before = JudgesEverySlowTick([NodeSpec(n) for n in NODES], health)
    reference = ReferenceState([ReferenceSpec(n) for n in NODES], health)
    judged = {"ours": 0, "before": 0}
    reasons: set[tuple[str, str]] = set()
    timeline = _timeline(sysfs_root)
    end = int(timeline[-1][0] - WALL_START) + 2
    k = 0
    for second in range(end):
        now = WALL_START + second + 0.5
        while k < len(timeline) and timeline[k][0] < now:
            for state in (ours, before, reference):
                state.ingest(timeline[k][1])
            k += 1
        mine = ours.snapshot(now)
        _same(mine, before.snapshot(now))
        _same(mine, reference.snapshot(now))
        judged["ours"] += ours.judged
        judged["before"] += before.judged
        for node in mine.nodes:
            reasons.add((node.name, node.state))
            reasons.update((node.name, why) for port in node.port_briefs for why in port.reasons)
            reasons.update((node.name, why) for gpu in node.gpu_briefs for why in gpu.reasons)
    assert judged["ours"] < judged["before"]
    # What the simulator did was seen, on both sides of the comparison.
    for seen in (
        ("node-001", "mlx5_2/1 symbol_error 30/s"),
        ("node-001", "mlx5_3/1 state DOWN"),
        ("node-001", "mlx5_3/1 link_downed +2"),
        ("node-001", "mlx5_5/1 rate 200 Gb/s < expected 400"),
        ("node-001", "unreachable"),
        ("node-002", "mlx5_0/1 phys_state Polling"),
        ("node-001", "HW thermal slowdown"),
        ("node-002", "up"),
    ):
        assert seen in reasons, sorted(reasons)
