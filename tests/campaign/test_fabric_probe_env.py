"""Fabric faults reach the probe environment while they hold, and only then."""

from __future__ import annotations

from collectors import sim
from collectors.sim.scenario import parse_scenario

SCENARIO = (
    '[[fault]]\nkind = "slow_fabric"\nnode = "node-003"\nfactor = 6.0\nat = 10\n'
    '[[fault]]\nkind = "fabric_hang"\nnode = "node-004"\n'
    '[[fault]]\nkind = "gpu_missing"\nnode = "node-005"\ngpu = 1\n'
)


def test_slow_fabric_holds_from_its_start() -> None:
    scenario = parse_scenario(SCENARIO)
    assert "fabric_slow" not in sim.probe_fault_env(scenario, "node-003", 9.9, gpus=2)
    assert sim.probe_fault_env(scenario, "node-003", 10, gpus=2)["fabric_slow"] == 6.0


def test_fabric_hang_and_a_missing_gpu() -> None:
    scenario = parse_scenario(SCENARIO)
    assert sim.probe_fault_env(scenario, "node-004", 0, gpus=2)["fabric_hang"] is True
    assert sim.probe_fault_env(scenario, "node-005", 0, gpus=2)["gpus"] == 1
    assert sim.probe_fault_env(scenario, "node-001", 0, gpus=2) == {
        "gpus": 2,
        "slow": {},
        "sdc": [],
    }
