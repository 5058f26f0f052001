"""The loopback fleet applies the scenario: outages, the real agent, probe faults."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from collectors.demo import start_demo_fleet
from collectors.sim import PROBE_ENV_VAR
from collectors.ssh import SshFleet, SshOptions, connect_node
from testkit.loopback import LoopbackFleet
from testkit.loopback.harness import FAST_INTERVAL as INTERVAL
from testkit.loopback.recorder import UpdateRecorder, eventually


def _scenario(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


async def test_scenario_outage_is_unreachable_then_back(
    fast_options: SshOptions, tmp_path: Path
) -> None:
    scenario = _scenario(
        tmp_path / "s.toml",
        '[[fault]]\nkind = "node_unreachable"\nnode = "node-002"\nat = "0s"\nuntil = "3s"\n',
    )
    async with LoopbackFleet(2, gpus=8, mode="canned", scenario=scenario) as loopback:
        rec = UpdateRecorder()
        async with SshFleet(loopback.targets(interval=INTERVAL), rec, fast_options):
            await rec.wait_until(lambda: rec.status("node-002") == "unreachable", 10)
            assert rec.samples["node-002"] == 0
            await rec.wait_until(lambda: rec.samples["node-001"] >= 3, 10)
            await rec.wait_until(lambda: rec.samples["node-002"] >= 1, 15)
            assert loopback.simulation is not None and loopback.simulation.elapsed >= 3


async def test_demo_fleet_runs_the_real_agent_on_the_simulator() -> None:
    demo = await start_demo_fleet(nodes=2, gpus=8, seed=3)
    try:
        assert all(isinstance(t.known_hosts, str) for t in demo.targets)  # keys verified
        rec = UpdateRecorder()
        async with SshFleet(demo.targets, rec, demo.options):
            await rec.wait_until(lambda: all(rec.samples[t.name] >= 1 for t in demo.targets), 60)
        for target in demo.targets:
            hello = rec.hellos[target.name]
            assert hello.host == target.name
            assert len(hello.gpus) == 8
            assert hello.agent != "canned"
            sample = rec.last_sample[target.name]
            assert len(sample.gpus) == 8 and len(sample.gpus[0] or []) == len(hello.gpu_fields)
    finally:
        await demo.stop()


@pytest.mark.parametrize("gpus", [8])
async def test_probe_commands_get_the_scenarios_faults(gpus: int, tmp_path: Path) -> None:
    scenario = _scenario(
        tmp_path / "s.toml",
        '[[fault]]\nkind = "slow_gpu"\nnode = "node-001"\ngpu = 3\nat = "0s"\nfactor = 3.0\n',
    )
    async with LoopbackFleet(1, gpus=gpus, mode="agent", scenario=scenario) as loopback:
        target = loopback.targets()[0]
        conn = await connect_node(target, SshOptions(ssh_config=None))
        async with conn:
            code = f"import os; print(os.environ[{PROBE_ENV_VAR!r}])"
            result = await conn.run(shlex.join([sys.executable, "-c", code]), timeout=30)
    assert result.exit_status == 0, result.stderr
    faults = json.loads(str(result.stdout))
    assert faults == {"gpus": 8, "slow": {"3": 3.0}, "sdc": []}


async def test_agents_share_the_fleets_scenario_clock(tmp_path: Path) -> None:
    scenario = _scenario(
        tmp_path / "s.toml",
        '[[fault]]\nkind = "xid79"\nnode = "node-001"\ngpu = 1\nat = "2s"\n',
    )
    async with LoopbackFleet(1, gpus=2, mode="agent", scenario=scenario) as loopback:
        simulation = loopback.simulation
        assert simulation is not None
        await eventually(lambda: simulation.elapsed >= 2.5, 10)
        # This agent starts after the fault began: its first sample already shows it.
        rec = UpdateRecorder()
        async with SshFleet(loopback.targets(), rec, SshOptions(ssh_config=None)):
            await rec.wait_until(lambda: rec.samples["node-001"] >= 1, 60)
            first = rec.last_sample["node-001"]
    assert first.lost == (1,)
