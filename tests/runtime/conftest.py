"""A simulated fleet on loopback SSH and a FleetRuntime watching it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet

# The fault comes once every agent streams: NVML (and so the simulator) does not report
# an XID that happened before the agent registered for events, and on a loaded machine
# the agents start seconds after the fleet.
SCENARIO = """
gpus = 8

[[fault]]
kind = "xid79"
node = "node-002"
gpu = 3
at = "8s"
"""


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
