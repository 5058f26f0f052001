"""The runtime's campaign_report capability: the campaign on record in the data
directory, read on a thread at most once a second, the last document handed out meanwhile."""

from __future__ import annotations

from pathlib import Path

from campaign.journal import Journal
from campaign.model import CampaignState, Evidence
from campaign.section import AcceptanceSection
from fleet.facade import HasCampaign
from fleet.settings.contract_section import ContractSection
from gpufleet.campaign_view import CampaignView
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime


def _state() -> CampaignState:
    state = CampaignState(("node-001", "node-002"), 0.0, 20.0)
    return state.reject("node-002", Evidence("soak", "xid_48", "XID 48 on GPU 1"))


async def test_the_runtime_reports_the_campaign_on_record(tmp_path: Path) -> None:
    config = parse_config({"fleet": {"hosts": ["node-001"]}})
    runtime = FleetRuntime(config, [], data_dir=tmp_path)
    try:
        assert isinstance(runtime, HasCampaign)
        assert runtime.campaign_report() is None  # nothing yet: the read starts
        assert await runtime.campaign.refreshed() is None  # and found no campaign
        Journal(tmp_path).save(_state(), 30.0)
        runtime.campaign._read_at = float("-inf")  # a second has passed
        runtime.campaign_report()
        report = await runtime.campaign.refreshed()
        assert report is not None and report["summary"]["rejected"] == 1
        assert runtime.campaign_report() == report
    finally:
        runtime.history.close()
        runtime.desk.close()


async def test_reads_at_most_once_a_second(tmp_path: Path) -> None:
    now = [100.0]
    view = CampaignView(tmp_path, AcceptanceSection(), ContractSection(), clock=lambda: now[0])
    Journal(tmp_path).save(_state(), 30.0)
    view.report()
    first = await view.refreshed()
    assert first is not None and first["summary"]["pending"] == 1
    Journal(tmp_path).save(_state().reject("node-001", Evidence("probes", "slow", "slow")), 31.0)
    now[0] = 100.9
    assert view.report() is first  # within the second: the document already read
    assert await view.refreshed() is first
    now[0] = 101.0
    view.report()
    second = await view.refreshed()
    assert second is not None and second["summary"]["rejected"] == 2


async def test_a_damaged_state_file_is_no_campaign(tmp_path: Path) -> None:
    (tmp_path / "campaign").mkdir()
    (tmp_path / "campaign" / "state.json").write_text("{not json")
    view = CampaignView(tmp_path, AcceptanceSection(), ContractSection())
    view.report()
    assert await view.refreshed() is None
