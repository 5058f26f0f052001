"""Recorded history for the cross-shard tests: one scripted fleet, ticked second by second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from cluster.shards import ShardSpec
from fleet.model import FleetSnapshot, NodeState, NodeTransition
from history import HistoryRecorder
from history.section import HistorySection
from testkit.synthetic_history import node_name
from testkit.synthetic_history import snapshot as synthetic

T0 = 1_791_590_400.0  # 2026-10-10 00:00 UTC
STATES: dict[int, list[tuple[float, NodeState]]] = {
    1: [(0, "up"), (120, "broken"), (300, "up")],
    4: [(0, "up"), (200, "unreachable"), (500, "up")],
}


def state_of(node: int, t: float) -> NodeState:
    current: NodeState = "up"
    for at, state in STATES.get(node, []):
        if t - T0 >= at:
            current = state
    return current


def fleet_ticks(nodes: int, seconds: int) -> list[FleetSnapshot]:
    """One snapshot per second, with the transitions a FleetState would report."""
    out = []
    for i in range(seconds):
        t = T0 + i
        changes = [
            NodeTransition(node_name(n), state_of(n, t), t, (f"{state_of(n, t)} (synthetic)",))
            for n in range(nodes)
            if i == 0 or state_of(n, t) != state_of(n, t - 1)
        ]
        out.append(
            synthetic(t, nodes, 8, states=lambda n, t=t: state_of(n, t), transitions=changes)
        )
    return out


def only(snapshot: FleetSnapshot, spec: ShardSpec) -> FleetSnapshot:
    """The shard's view of the same instant: its nodes and their transitions."""
    return replace(
        snapshot,
        nodes=tuple(n for n in snapshot.nodes if spec.owns(n.name)),
        transitions=tuple(t for t in snapshot.transitions if spec.owns(t.node)),
    )


def record(data_dir: Path, ticks: list[FleetSnapshot], spec: ShardSpec | None) -> None:
    now = [T0]
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: now[0])
    for tick in ticks:
        now[0] = tick.taken_at
        recorder.record(tick if spec is None else only(tick, spec))
    recorder.close()


def record_then_die(data_dir: Path, ticks: int, spec: ShardSpec) -> None:
    """A shard process records the first ``ticks`` seconds of the scenario, flushes as a
    recorder does every few seconds, and is killed (SIGKILL: nothing closed)."""
    root = Path(__file__).resolve().parents[2]
    code = (
        "import os, signal, sys; from pathlib import Path\n"
        "from tests.cluster.recorded import T0, fleet_ticks, only\n"
        "from cluster.shards import ShardSpec\n"
        "from history.section import HistorySection\n"
        "from history import HistoryRecorder\n"
        "spec = ShardSpec(int(sys.argv[2]), int(sys.argv[3]))\n"
        "now = [T0]\n"
        "recorder = HistoryRecorder(Path(sys.argv[1]), HistorySection(), clock=lambda: now[0])\n"
        "for tick in fleet_ticks(6, int(sys.argv[4])):\n"
        "    now[0] = tick.taken_at\n"
        "    recorder.record(only(tick, spec))\n"
        "recorder.flush()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, "-c", code, str(data_dir), str(spec.index), str(spec.count), str(ticks)]
    done = subprocess.run(argv, env=env, cwd=root, capture_output=True, timeout=120, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
