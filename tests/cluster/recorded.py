"""Recorded history for the cross-shard tests: one scripted fleet, ticked second by second."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fleet.cluster.shards import ShardSpec
from fleet.config.history_section import HistorySection
from fleet.history import HistoryRecorder
from fleet.history.synthetic import node_name
from fleet.history.synthetic import snapshot as synthetic
from fleet.model import FleetSnapshot, NodeState, NodeTransition

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
