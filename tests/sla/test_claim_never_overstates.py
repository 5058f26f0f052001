"""A claim that never overstates: money withheld below the coverage it needs (shown only
as a labelled projection), downtime at the availability's precision, committed slots
never seen named, and a contract without price or tiers saying so; in JSON, Markdown and
HTML alike, through ``gpufleet sla`` on a recorded history."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpufleet.cli import main
from history import HistoryRecorder
from history.section import HistorySection
from ledger.sla.section import SlaSection
from ledger.sla.summary import panel_texts, sla_for_month
from testkit.synthetic_history import snapshot

T0 = datetime(2026, 9, 10, 10, 0, tzinfo=UTC).timestamp()
PRICED = """
[sla]
committed_nodes = 32
gpu_hour_price = 2.50
tiers = [{below = 99.5, credit_percent = 10}]
resource_ids = { "gpu-0003" = "i-003", "gpu-0020" = "i-020", "gpu-0031" = "i-031" }
"""
BARE = """
[sla]
committed_nodes = 16
"""


def record(data_dir: Path) -> None:
    """16 nodes for 6 minutes (ticks every 30 s, coverage T0 to T0 + 330 s); gpu-0001
    broken from T0 + 120 s to the end."""
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: T0)
    for k in range(12):

        def state(n: int, k: int = k) -> str:
            return "broken" if n == 1 and k >= 4 else "up"

        recorder.record(snapshot(T0 + 30 * k, 16, states=state))  # type: ignore[arg-type]
    recorder.close()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("six-minutes") / "data"
    record(path)
    return path


def claim(data_dir: Path, tmp_path: Path, contract: str, fmt: str) -> str:
    config = tmp_path / "gpufleet.toml"
    config.write_text(contract)
    out = tmp_path / f"claim.{fmt}"
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--format", fmt, "-o", str(out)]) == 0  # fmt: skip
    return out.read_text(encoding="utf-8")


def test_six_minutes_of_history_claim_no_money_only_a_labelled_projection(
    data_dir: Path, tmp_path: Path
) -> None:
    data = json.loads(claim(data_dir, tmp_path, PRICED, "json"))
    reason = "insufficient coverage: 6 min monitored, a money figure needs 24.0 h"
    assert data["money_withheld"] == reason
    assert (data["owed"], data["tiered_credit"], data["pro_rata_credit"]) == (None, None, None)
    assert data["projection"]["label"] == "projection, not a claim"
    # Tiered: 10 % of the month's bill 32 x 8 x 2.50 x 720 = 460,800.00 is 46,080.00.
    assert data["projection"]["tiered_credit"] == "46080.00"
    markdown = claim(data_dir, tmp_path, PRICED, "md")
    assert f"| Owed (tiered) | {reason} |" in markdown
    assert "| Owed (tiered) (projection, not a claim) | 46,080.00 USD |" in markdown
    assert "46,080.00" not in markdown.replace("(projection, not a claim) | 46,080.00", "")
    html = claim(data_dir, tmp_path, PRICED, "html")
    assert reason in html and "(projection, not a claim)" in html


def test_downtime_has_the_precision_of_the_availability_beside_it(
    data_dir: Path, tmp_path: Path
) -> None:
    """Down: 16 slots never seen for 330 s and gpu-0001 for 210 s, (16 x 330 + 210) / 3600
    = 1.525 node-hours. Availability printed to 4 decimals of a percent of 32 x 330 s =
    2.9333 node-hours is a step of 2.9e-6 node-hours: 6 decimals."""
    data = json.loads(claim(data_dir, tmp_path, PRICED, "json"))
    assert data["down_node_hours_text"] == "1.525000 node-hours"
    assert "| Down node-hours | 1.525000 |" in claim(data_dir, tmp_path, PRICED, "md")


def test_committed_slots_never_seen_are_counted_and_named_by_resource_id(
    data_dir: Path, tmp_path: Path
) -> None:
    data = json.loads(claim(data_dir, tmp_path, PRICED, "json"))
    unseen = data["unseen_slots"]
    assert unseen["count"] == 16
    assert unseen["resource_ids"] == {"gpu-0020": "i-020", "gpu-0031": "i-031"}
    line = (
        "16 committed slots never seen (no node reported; counted as down): "
        "gpu-0020 (i-020), gpu-0031 (i-031)"
    )
    assert unseen["text"] == line
    assert f"| Never seen | {line} |" in claim(data_dir, tmp_path, PRICED, "md")


def test_a_contract_without_price_or_tiers_says_so_in_one_line(
    data_dir: Path, tmp_path: Path
) -> None:
    data = json.loads(claim(data_dir, tmp_path, BARE, "json"))
    line = "The contract has no gpu_hour_price and no tiers: availability only, no credit."
    assert data["contract_note"] == line and data["unseen_slots"]["count"] == 0
    markdown = claim(data_dir, tmp_path, BARE, "md")
    assert f"| Contract | {line} |" in markdown and "Never seen" not in markdown


def test_the_panel_words_withhold_money_and_keep_downtime_precise(data_dir: Path) -> None:
    """What the SLA panel prints comes from the ledger: 6 minutes is no money."""
    contract = load_config_text(PRICED)
    result = sla_for_month(data_dir, contract, "2026-09", T0 + 3600)
    words = panel_texts(result, contract)
    assert words["money_text"] == ("insufficient coverage (projection, not a claim: 46,080.00 USD)")
    assert words["down_text"] == "1.52500 node-hours"  # 3 decimals of a percent: 5 here
    assert words["notes"] == (
        "16 committed slots never seen (no node reported; counted as down): "
        "gpu-0020 (i-020), gpu-0031 (i-031)",
    )
    bare = load_config_text(BARE)
    assert (
        panel_texts(sla_for_month(data_dir, bare, "2026-09", T0 + 3600), bare)["money_text"]
        == "no credit: the contract has no price and no tiers"
    )


def load_config_text(text: str) -> SlaSection:
    return SlaSection.model_validate(tomllib.loads(text)["sla"])
