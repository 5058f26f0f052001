"""The accept command's pure parts: durations, the node subset, the plan, --compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaign.compare import compare_table, load_reports
from campaign.model import CampaignState, Evidence, FabricStep
from campaign.report import report_dict
from campaign.section import AcceptanceSection
from collectors.ssh import NodeTarget
from fleet.settings.contract_section import ContractSection
from gpufleet.commands.accept import choose_targets, parse_duration, plan_text
from gpufleet.config import parse_config

TARGETS = [NodeTarget(name=f"node-{i:03d}", host=f"10.0.0.{i}") for i in range(1, 5)]


def test_durations() -> None:
    assert parse_duration("48h") == 172800.0
    assert parse_duration("90s") == 90.0
    assert parse_duration("30m") == 1800.0
    assert parse_duration("15") == 15.0
    for bad in ("", "h", "-5m", "nan", "inf", "5w"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_nodes_outside_the_configured_fleet_are_refused() -> None:
    assert [t.name for t in choose_targets(TARGETS, "node-[002-003]")] == ["node-002", "node-003"]
    assert choose_targets(TARGETS, None) == TARGETS
    with pytest.raises(ValueError, match="node-009"):
        choose_targets(TARGETS, "node-[003,009]")


def test_the_plan_names_every_stage_and_the_rungs() -> None:
    config = parse_config({"contract": {"gpus_per_node": 8, "gpu_model": "H100"}})
    plan = plan_text(config, TARGETS, 172800.0)
    assert "4 nodes" in plan and "fabric ladder: pairs, then 4 nodes;" in plan
    assert "8 GPUs per node, model H100" in plan and "172800 s" in plan
    for stage in ("inventory", "health gate", "node probes", "fabric ladder", "soak"):
        assert stage in plan


def write_report(path: Path, price: str, tflops: float, bad: int) -> Path:
    nodes = tuple(f"n{i}" for i in range(4))
    state = CampaignState(nodes, 0.0, 0.0, finished_at=1.0, tflops_per_gpu=tflops)
    for node in nodes[:bad]:
        state = state.reject(node, Evidence("inventory", "gpu_count", "7 of 8 GPUs"))
    steps = (
        FabricStep("ladder", ("n0", "n1"), "ok", 40.0, None, 0.0, 1.0),
        FabricStep("ladder", nodes, "ok", 30.0, None, 0.0, 1.0),
    )
    state = CampaignState(
        nodes,
        0.0,
        0.0,
        rejected=state.rejected,
        steps=steps,
        finished_at=1.0,
        tflops_per_gpu=tflops,
    )
    contract = ContractSection(gpu_hour_price=price)  # type: ignore[arg-type]
    path.write_text(json.dumps(report_dict(state, AcceptanceSection(), contract)))
    return path


def test_compare_side_by_side(tmp_path: Path) -> None:
    a = write_report(tmp_path / "a.json", "2.50", 400.0, 0)
    b = write_report(tmp_path / "b.json", "3.00", 120.0, 1)
    table = compare_table(load_reports([a, b]))
    rows = table.splitlines()
    # 2.50 * 1000 / 400 = 6.25; 3.00 * 1000 / 120 = 25.00; scaling 30 / 40 = 75 %.
    assert rows[2].startswith("| a | 4/4 (100.0 %) | 2->4 nodes: 75 % | 400 | USD 6.25 | none |")
    assert rows[3].startswith("| b | 3/4 (75.0 %) | 2->4 nodes: 75 % | 120 | USD 25.00 |")
    assert "gpu_count 1" in rows[3]


def test_compare_refuses_other_json(tmp_path: Path) -> None:
    other = tmp_path / "x.json"
    other.write_text('{"schema": "something else"}')
    with pytest.raises(ValueError, match=r"not a gpufleet\.acceptance/1 report"):
        load_reports([other])
