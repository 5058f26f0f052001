"""The agent's readings /metrics/dcgm asks for by name: memory clock, HBM temperature,
power management limit and GPU fabric health, from a simulated H100 through the agent
to the GPU snapshot and dcgm-exporter's families."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from collectors.sim.workload import MEM_CLOCK
from collectors.updates import NodeMessage, NodeStatusChange
from exporter.dcgm import DcgmExposition
from exporter.xids import XidTally
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.agent.conftest import run_agent


def test_the_dcgm_readings_reach_the_snapshot_and_the_dcgm_families(sysfs_dir: Path) -> None:
    run = run_agent(sysfs_dir, samples=2, slow_interval=1.0)
    state = FleetState([NodeSpec("node-001", 8)], HealthSection())
    state.ingest(NodeStatusChange("node-001", "streaming", "", 0.0))
    for message in run.messages:
        state.ingest(NodeMessage("node-001", message, message.t))
    snap = state.snapshot(run.messages[-1].t + 0.1)
    gpu = snap.nodes[0].gpus[2]
    assert gpu.mem_clock_mhz == MEM_CLOCK
    assert gpu.memory_temp_c is not None and gpu.temp_c is not None
    assert gpu.memory_temp_c - gpu.temp_c in range(-2, 12)  # the sim's HBM runs ~6 C hotter
    assert gpu.power_mgmt_limit_w == 700.0
    assert (gpu.fabric_health_summary, gpu.fabric_health_mask) == (1, 0)  # healthy fabric
    body = DcgmExposition(XidTally()).render(snap)
    assert body is not None
    names = {f.name for f in text_string_to_metric_families(body.decode()) if f.samples}
    assert {
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY",
        "DCGM_FI_DEV_FABRIC_HEALTH_MASK",
    } <= names
