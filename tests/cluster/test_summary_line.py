"""The headless viewer's line: a silent shard's GPUs are unmonitored, not unhealthy."""

from __future__ import annotations

from dataclasses import replace

from fleet.model import FleetSnapshot, GpuSnapshot
from gpufleet.attach import summary_line
from tests.cluster.test_board import node


def test_unmonitored_gpus_are_not_counted_unhealthy() -> None:
    silent = replace(
        node("node-002"),
        status="unmonitored",
        gpus=tuple(GpuSnapshot(i, f"g{i}", "H100", verdict="unknown") for i in range(8)),
    )
    snapshot = FleetSnapshot(nodes=(node("node-001"), silent), taken_at=100.0)
    line = summary_line(snapshot)
    assert "GPUs 8/8 healthy, 8 unmonitored" in line
    assert "0 broken, 1 unmonitored" in line
