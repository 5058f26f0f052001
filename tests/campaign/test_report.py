"""The report's JSON, its JUnit XML read back by a parser, the exit status and the money."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path

from campaign.journal import Journal, open_campaign
from campaign.model import CampaignState, Evidence, FabricStep, TimelineEntry
from campaign.render import report_html, report_junit, report_markdown
from campaign.report import exit_status, report_dict, usd_per_kilo_tflops_hour
from campaign.section import AcceptanceSection
from fleet.settings.contract_section import ContractSection

NODES = ("node-001", "node-002", "node-003")


def finished_state() -> CampaignState:
    state = CampaignState(NODES, started_at=1_700_000_000.0, soak_s=20.0)
    state = state.reject(
        "node-002", Evidence("inventory", "gpu_count", "1 of 2 GPUs present <&>", 1, 2)
    )
    steps = (FabricStep("ladder", ("node-001", "node-003"), "ok", 4.0, 3.2, 1_700_000_010.0, 2.0),)
    timeline = (TimelineEntry("inventory", 1_700_000_000.0, 1_700_000_001.0),)
    return CampaignState(
        NODES,
        1_700_000_000.0,
        20.0,
        rejected=state.rejected,
        steps=steps,
        timeline=timeline,
        soak_done_s=20.0,
        finished_at=1_700_000_100.0,
    )


def test_junit_lists_exactly_the_rejected_nodes() -> None:
    report = report_dict(finished_state(), AcceptanceSection(), ContractSection(gpus_per_node=2))
    root = ET.fromstring(report_junit(report))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("3", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == set(NODES)
    failed = {name for name, case in cases.items() if case.find("failure") is not None}
    assert failed == {"node-002"}
    failure = cases["node-002"].find("failure")
    assert failure is not None and failure.get("type") == "inventory/gpu_count"
    assert "<&>" in (failure.get("message") or "")


def test_summary_and_exit_status() -> None:
    report = report_dict(finished_state(), AcceptanceSection(), ContractSection())
    assert report["summary"]["accepted"] == 2
    assert report["summary"]["accepted_percent"] == 66.67
    assert report["summary"]["failures_by_cause"] == {"gpu_count": 1}
    assert report["fabric"]["scaling"] == [{"nodes": 2, "busbw_gbps": 4.0}]
    assert exit_status(report) == 1
    unfinished = report_dict(CampaignState(NODES, 0.0, 1.0), AcceptanceSection(), ContractSection())
    assert exit_status(unfinished) == 2
    assert {n["status"] for n in unfinished["nodes"]} == {"pending"}


def test_markdown_and_html_escape_what_nodes_say() -> None:
    report = report_dict(finished_state(), AcceptanceSection(), ContractSection())
    assert "| node-002 | rejected | inventory |" in report_markdown(report)
    page = report_html(report)
    assert "&lt;&amp;&gt;" in page and "<&>" not in page
    assert "<svg" in page


def test_price_of_a_thousand_tflops_hours_by_hand() -> None:
    # USD 2.50 per GPU-hour at 400 TFLOPS: 2.50 * 1000 / 400 = 6.25.
    assert usd_per_kilo_tflops_hour(Decimal("2.50"), 400.0) == Decimal("6.25")
    # USD 3.00 at 120 TFLOPS: 3000 / 120 = 25.00.
    assert usd_per_kilo_tflops_hour(Decimal("3.00"), 120.0) == Decimal("25.00")
    assert usd_per_kilo_tflops_hour(None, 400.0) is None


def test_a_resumed_campaign_records_its_gap(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    state = CampaignState(NODES, 100.0, 20.0, done=("inventory",))
    journal.save(state, saved_at=150.0)
    resumed = open_campaign(journal, CampaignState(NODES, 200.0, 20.0), now=210.0)
    assert resumed.done == ("inventory",) and resumed.started_at == 100.0
    gap = resumed.timeline[-1]
    assert (gap.what, gap.started_at, gap.ended_at) == ("gap", 150.0, 210.0)
    report = report_dict(resumed, AcceptanceSection(), ContractSection())
    assert report["soak"]["gaps"][0]["from"] == 150.0
