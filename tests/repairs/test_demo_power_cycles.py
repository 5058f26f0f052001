"""The loopback fleet's power cycles: which scenario faults imply one, and a replaced
node's new host key, trusted through the demo's known_hosts and nowhere else."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from collectors.demo.fleet import SimulatedFleet
from collectors.demo.power import PowerCycle, PowerSchedule, power_cycles
from collectors.sim import parse_scenario
from collectors.ssh import SshOptions, connect_node

SCENARIO = """
[[fault]]
kind = "recover"
node = "node-002"
gpu = 1
at = "30s"
new_uuid = true

[[fault]]
kind = "recover"
node = "node-002"
at = "20s"

[[fault]]
kind = "reboot"
node = "node-001"
at = "10s"

[[fault]]
kind = "node_replaced"
node = "node-003"
at = "40s"
"""


def test_reboots_swaps_and_replacements_are_power_cycles_in_time_order() -> None:
    cycles = power_cycles(parse_scenario(SCENARIO))
    assert cycles == (
        PowerCycle("node-001", 10.0, "reboot"),
        PowerCycle("node-002", 30.0, "gpu_swap"),  # a plain recover is not a power cycle
        PowerCycle("node-003", 40.0, "node_replaced"),
    )


def test_each_power_cycle_is_handed_out_once() -> None:
    schedule = PowerSchedule(power_cycles(parse_scenario(SCENARIO)))
    assert schedule.due(5.0) == []
    assert [c.node for c in schedule.due(31.0)] == ["node-001", "node-002"]
    assert schedule.due(31.0) == []
    assert [c.node for c in schedule.due(100.0)] == ["node-003"]
    assert not schedule


async def test_a_replaced_nodes_new_key_is_refused_outside_the_demos_known_hosts(
    tmp_path: Path,
) -> None:
    async with SimulatedFleet(1, gpus=1) as fleet:
        old_known = tmp_path / "known_hosts.before"
        shutil.copy(fleet.known_hosts, old_known)
        await fleet.power_cycle(PowerCycle("node-001", 0.0, "node_replaced"))
        (target,) = fleet.targets()
        options = SshOptions(ssh_config=None, connect_timeout=5.0)
        # A client that knew the old key refuses the new one: never silently accepted.
        with pytest.raises(Exception, match=r"(?i)host key"):
            await connect_node(replace(target, known_hosts=str(old_known)), options)
        # The demo wrote the new key into its own known_hosts: the demo connects.
        conn = await connect_node(target, options)
        async with conn:
            result = await conn.run("true", timeout=10)
        assert result.exit_status == 0
