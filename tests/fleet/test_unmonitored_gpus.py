"""A silent shard's GPUs are the monitor's gap, not broken hardware."""

from __future__ import annotations

from collectors.updates import NodeStatus
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot, Verdict


def _node(name: str, status: NodeStatus, verdict: Verdict) -> NodeSnapshot:
    gpus = tuple(GpuSnapshot(i, f"GPU-{name}-{i}", "H100", verdict=verdict) for i in range(8))
    return NodeSnapshot(name, status, state="up", gpus=gpus)


def test_unmonitored_gpus_are_neither_healthy_nor_counted_as_unhealthy() -> None:
    # 16 nodes: 11 watched and healthy, 5 of a dead shard unmonitored (their GPUs unknown).
    nodes = tuple(_node(f"n{i:02d}", "streaming", "ok") for i in range(11)) + tuple(
        _node(f"n{i:02d}", "unmonitored", "unknown") for i in range(11, 16)
    )
    snap = FleetSnapshot(0.0, nodes)
    assert (snap.gpus_healthy, snap.gpus_total, snap.gpus_unmonitored) == (88, 88, 40)
