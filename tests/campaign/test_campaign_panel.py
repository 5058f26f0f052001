"""The campaign panel's drawing, from a report document, without an app."""

from __future__ import annotations

from campaign.model import CampaignState, Evidence, FabricStep, TimelineEntry
from campaign.report import report_dict
from campaign.section import AcceptanceSection
from fleet.settings.contract_section import ContractSection
from tui.widgets.campaign_panel import NO_CAMPAIGN, campaign_markup, current_stage


def test_a_running_soak_shows_its_stage_ladder_and_events() -> None:
    state = CampaignState(("node-001", "node-[x]"), 0.0, 20.0)
    state = state.reject("node-[x]", Evidence("soak", "xid_48", "XID 48 on GPU 1 [bold]"))
    timeline = tuple(
        TimelineEntry(s, 0.0, 1.0) for s in ("inventory", "health", "probes", "fabric")
    )
    steps = (FabricStep("ladder", ("node-001", "node-[x]"), "ok", 50.0, 40.0, 0.0, 1.0),)
    state = CampaignState(
        state.nodes, 0.0, 20.0, rejected=state.rejected, timeline=timeline, steps=steps
    )
    report = report_dict(state, AcceptanceSection(), ContractSection())
    assert current_stage(report) == "soak"
    markup = campaign_markup(report)
    assert "Stage: soak" in markup and "rejected 1" in markup and "pending 1" in markup
    assert "50 GB/s" in markup
    assert r"\[bold]" in markup and r"node-\[x]" in markup  # node text cannot style the panel
    assert campaign_markup(None) == NO_CAMPAIGN
