"""A silent shard's GPUs are the monitor's gap in the GPUs tile, not unhealthy GPUs."""

from __future__ import annotations

from typing import Literal

from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot
from tui.header_view import header_tiles


def _node(
    name: str, status: Literal["streaming", "unmonitored"], verdict: Literal["ok", "unknown"]
) -> NodeSnapshot:
    gpus = tuple(GpuSnapshot(i, f"GPU-{name}-{i}", "H100", verdict=verdict) for i in range(8))
    return NodeSnapshot(name, status, state="up", gpus=gpus, expected_gpus=8)


def test_a_silent_shards_gpus_are_unmonitored_not_unhealthy_in_the_tile() -> None:
    nodes = tuple(_node(f"a{i}", "streaming", "ok") for i in range(11)) + tuple(
        _node(f"b{i}", "unmonitored", "unknown") for i in range(5)
    )
    tiles = header_tiles(FleetSnapshot(0.0, nodes))
    assert tiles.gpus.startswith("[b]88[/]/88 healthy") and "40 unmonitored" in tiles.gpus
    assert not tiles.gpus_degraded
