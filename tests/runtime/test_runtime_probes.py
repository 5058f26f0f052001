"""Probing from the running fleet: a slow simulated GPU becomes a straggler on its snapshot."""

from __future__ import annotations

import sys
from pathlib import Path

from fleet.config import parse_config
from fleet.probe_history import read_probe_history
from fleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet

SLOW_GPU = """
gpus = 2

[[fault]]
kind = "slow_gpu"
node = "node-002"
gpu = 1
at = "0s"
factor = 3.0
"""


async def test_probe_marks_the_slow_gpu_a_straggler_against_its_peers(tmp_path: Path) -> None:
    scenario = tmp_path / "slow.toml"
    scenario.write_text(SLOW_GPU)
    config = parse_config(
        {
            "fleet": {"hosts": ["node-[001-002]"], "expected_gpus": 2},
            "probes": {"probe_python": sys.executable},
        }
    )
    async with LoopbackFleet(nodes=2, gpus=2, scenario=scenario, seed=3) as lf:
        runtime = FleetRuntime(config, lf.targets(), data_dir=tmp_path / "data")
        await runtime.start()
        try:
            first = await runtime.prober.probe("node-001", "quick")
            second = await runtime.prober.probe("node-002", "quick")
            snapshot = runtime.tick()
        finally:
            await runtime.stop()
    assert first.status == "ok" and second.status == "ok", (first.error, second.error)
    assert second.verdict_of(1) == "straggler"
    assert second.verdict_of(0) == "pass"
    node = snapshot.node("node-002")
    assert node is not None
    assert [g.probe_verdict for g in node.gpus] == ["pass", "straggler"]
    recorded = read_probe_history(tmp_path / "data", node="node-002")
    assert "straggler" in recorded["gpu_verdict"].to_list()
