"""A simulated fleet on loopback SSH and a FleetRuntime watching it."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from collectors.loopback.fleet import LoopbackFleet
from fleet.config import parse_config
from fleet.model import FleetSnapshot
from fleet.runtime import FleetRuntime

SCENARIO = """
gpus = 8

[[fault]]
kind = "xid79"
node = "node-002"
gpu = 3
at = "1s"
"""


async def wait_for_snapshot(
    runtime: FleetRuntime, accept: Callable[[FleetSnapshot], bool], within_s: float = 30.0
) -> FleetSnapshot:
    """The first snapshot ``accept`` takes, waiting at most ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        snap = runtime.latest()
        if snap is not None and accept(snap):
            return snap
        await asyncio.sleep(0.1)
    raise AssertionError(f"no accepted snapshot in {within_s} s; last: {runtime.latest()}")


@pytest.fixture
async def sim_runtime(tmp_path: Path) -> AsyncIterator[tuple[FleetRuntime, LoopbackFleet]]:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    config = parse_config(
        {
            "fleet": {"hosts": ["node-[001-003]"], "interval": 0.5, "slow_interval": 1.0},
            "probes": {"probe_python": sys.executable},
            "sla": {
                "committed_nodes": 3,
                "gpu_hour_price": 2,
                "tiers": [{"below": 99.5, "credit_percent": 10}],
            },
        }
    )
    async with LoopbackFleet(nodes=3, gpus=8, scenario=scenario, seed=7) as lf:
        targets = lf.targets(interval=0.5, slow_interval=1.0)
        runtime = FleetRuntime(config, targets, data_dir=tmp_path / "data")
        await runtime.start()
        try:
            yield runtime, lf
        finally:
            await runtime.stop()
