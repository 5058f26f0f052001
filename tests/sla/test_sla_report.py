"""``gpufleet sla`` on recorded history: JSON keys, evidence, Markdown and HTML, summary."""

from __future__ import annotations

import hashlib
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleet.model import EventRecord, SlaSummary
from gpufleet.cli import main
from gpufleet.config import load_config
from history import HistoryRecorder
from history.section import HistorySection
from ledger.sla import sla_summary
from ledger.sla.summary import provisional_words
from testkit.synthetic_history import snapshot

T0 = datetime(2026, 9, 10, 10, 0, tzinfo=UTC).timestamp()
CONTRACT = """
[sla]
committed_nodes = 2
gpus_per_node = 8
gpu_hour_price = 2.50
currency = "EUR"
grace_minutes = 10
credit_model = "pro_rata"
tiers = [{below = 99.5, credit_percent = 10}, {below = 90, credit_percent = 25}]
min_coverage_for_money = 3600  # the 2 h recorded here are enough to show money
"""
XID = EventRecord(
    t=T0 + 1800, node="gpu-0001", kind="xid", gpu=3, code=79, detail="fallen off the bus"
)


def record_september_day(data_dir: Path) -> HistoryRecorder:
    """Ticks every 30 s for 2 h from T0; node 1 broken from T0 + 30 min to T0 + 60 min.

    Coverage = [T0, T0 + 7170 s] (the last tick is at 239 x 30 s).
    """
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: T0)
    for k in range(240):
        t = T0 + 30 * k

        def state(n: int, k: int = k) -> str:
            return "broken" if n == 1 and 60 <= k < 120 else "up"

        recorder.record(snapshot(t, 2, states=state, events=[XID] if k == 60 else []))  # type: ignore[arg-type]
    return recorder


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    data_dir = tmp_path / "data"
    record_september_day(data_dir).close()
    config = tmp_path / "gpufleet.toml"
    config.write_text(CONTRACT)
    return data_dir, config


def test_json_claim_has_the_documented_keys_and_figures(
    setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Down = 1800 s (one of 2 slots for 30 min) over 7170 monitored seconds.

    Availability = 100 x (1 - 1800 / (2 x 7170)) = 87.447698...%; tier 25 % (below 90).
    Pro rata = 0.5 h x 8 GPUs x 2.50 = 10.00 EUR (owed); bill = 2 x 8 x 2.50 x 720 = 28,800.00.
    """
    data_dir, config = setup
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--format", "json"]) == 0  # fmt: skip
    claim = json.loads(capsys.readouterr().out)
    assert claim["availability_percent"] == pytest.approx(100 * (1 - 1800 / 14340), abs=1e-9)
    assert claim["coverage_percent"] == pytest.approx(100 * 7170 / (30 * 86400))
    assert (claim["bill"], claim["pro_rata_credit"], claim["owed"]) == (
        "28800.00",
        "10.00",
        "10.00",
    )
    assert claim["tier_credit_percent"] == "25" and claim["tiered_credit"] == "7200.00"
    assert claim["period"] == {"start": "2026-09-01T00:00:00Z", "end": "2026-10-01T00:00:00Z",
                               "complete": True}  # fmt: skip
    (outage,) = claim["outages"]
    assert (outage["node"], outage["start"], outage["minutes"]) == (
        "gpu-0001",
        "2026-09-10T10:30:00Z",
        30.0,
    )
    assert outage["evidence"] == [
        {
            "ts": "2026-09-10T10:30:00Z",
            "kind": "xid",
            "gpu": 3,
            "uuid": None,
            "code": 79,
            "detail": "fallen off the bus",
        }
    ]
    assert claim["forgiven_outages"] == []
    day = next(d for d in claim["daily"] if d["date"] == "2026-09-10")
    assert day["availability_percent"] == pytest.approx(claim["availability_percent"])
    assert 0 < day["utilization_percent"] < 100


def test_html_claim_is_self_contained_with_a_chart(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    data_dir, config = setup
    out = tmp_path / "claim.html"
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--format", "html", "-o", str(out)]) == 0  # fmt: skip
    page = out.read_text()
    assert "<svg" in page and "<polyline" in page and 'class="avail' in page
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "gpu-0001" in page and "fallen off the bus" in page


def test_markdown_claim_lists_outages(
    setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, config = setup
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# SLA claim 2026-09")
    assert "| gpu-0001 | 2026-09-10T10:30:00Z | 2026-09-10T11:00:00Z | 30.0 |" in text
    assert "10.00 EUR" in text


def test_without_a_contract_the_command_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "empty.toml"
    config.write_text("")
    assert main(["sla", "--data-dir", str(tmp_path), "-c", str(config), "--month", "2026-09"]) == 2
    assert "no [sla] table" in capsys.readouterr().err


def test_summary_from_the_live_recorder_matches_the_one_from_disk(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    data_dir, config = setup
    contract = load_config(config).sla
    assert contract is not None
    # The stopped history's month to date ends at its last observation (T0 + 7170 s),
    # however late it is read; the live recorder is asked at that very time.
    on_disk = sla_summary(data_dir, contract, T0 + 7200)
    assert sla_summary(data_dir, contract, T0 + 86_400) == on_disk
    live = record_september_day(tmp_path / "live")
    in_memory = sla_summary(live, contract, T0 + 7170)
    live.close()
    assert on_disk == in_memory
    assert on_disk.month == "2026-09" and on_disk.currency == "EUR"
    assert on_disk.availability_pct == pytest.approx(100 * (1 - 1800 / 14340))
    assert on_disk.down_node_hours == 0.5 and on_disk.credit_owed == 10.0


def test_gpu_degraded_time_is_an_appendix_outside_the_credit(
    setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """gpu-0001 broken 30 min with 8 failed GPUs: 4 GPU-hours "fail", XID 79 once, and the
    credit is the same 10.00 EUR as without the appendix."""
    data_dir, config = setup
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--format", "json"]) == 0  # fmt: skip
    claim = json.loads(capsys.readouterr().out)
    appendix = claim["gpu_degraded_appendix"]
    assert appendix["gpu_hours"]["gpu-0001"] == {"fail": 4.0, "lost": 0.0, "warn": 0.0}
    assert "gpu-0000" not in appendix["gpu_hours"]
    assert appendix["broken_hours_by_reason"] == {"gpu-0001": {"broken (synthetic)": 0.5}}
    assert appendix["events"] == {"gpu-0001": {"xid 79": 1}}
    assert claim["owed"] == "10.00" and claim["down_node_hours"] == 0.5
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09"]) == 0
    text = capsys.readouterr().out
    assert "## Appendix: GPU-degraded time (not part of the claim or the credit)" in text
    assert "| gpu-0001 | 4.00 | 0.00 | 0.00 | broken (synthetic): 0.50 h | xid 79 x1 |" in text


def test_the_evidence_bundle_holds_the_claim_evidence_and_a_manifest_that_checks(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    data_dir, config = setup
    out = tmp_path / "claim.zip"
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--bundle", str(out)]) == 0  # fmt: skip
    with zipfile.ZipFile(out) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    assert {"claim.md", "claim.html", "claim.json", "contract.json", "coverage_log.csv",
            "evidence/outages.csv", "evidence/events.csv", "evidence/state_intervals.csv",
            "evidence/connection_attempts.csv",
            "evidence/samples_around_outages.json", "evidence/probes.csv",
            "evidence/causes.json", "evidence/repairs.json", "evidence/jobs_hit.json",
            "SHA256SUMS", "MANIFEST.json"} == set(files)  # fmt: skip
    for line in files["SHA256SUMS"].decode().splitlines():  # what `sha256sum -c` checks
        digest, name = line.split("  ")
        assert hashlib.sha256(files[name]).hexdigest() == digest
    outages = files["evidence/outages.csv"].decode().splitlines()
    assert outages[1].startswith("counted,gpu-0001,,2026-09-10T10:30:00Z,2026-09-10T11:00:00Z,30.0")
    assert (
        "2026-09-10T10:30:00Z,gpu-0001,3,xid,79,fallen off the bus"
        in files["evidence/events.csv"].decode()
    )
    (around,) = json.loads(files["evidence/samples_around_outages.json"])
    assert around["last_minute_before"]["minute"] == "2026-09-10T10:29:00Z"
    assert around["first_minute_after"]["minute"] == "2026-09-10T11:00:00Z"
    assert json.loads(files["contract.json"])["committed_nodes"] == 2
    again = tmp_path / "again.zip"
    assert main(["sla", "--data-dir", str(data_dir), "-c", str(config), "--month", "2026-09",
                 "--bundle", str(again)]) == 0  # fmt: skip
    with zipfile.ZipFile(again) as archive:
        second = {name: archive.read(name) for name in archive.namelist()}
    # The same history gives the same bytes; only the manifest's generation time moves.
    assert {n: b for n, b in second.items() if n != "MANIFEST.json"} == {
        n: b for n, b in files.items() if n != "MANIFEST.json"
    }
    manifests = [json.loads(f["MANIFEST.json"]) for f in (files, second)]
    for manifest in manifests:
        del manifest["generated_at"]
    assert manifests[0] == manifests[1]


def test_the_panel_words_say_provisional_and_never_below_slo_when_unmeasured() -> None:
    base = {"month": "2026-11", "slo_pct": 99.5, "down_node_hours": 0.0, "tier_credit_pct": 0.0,
            "credit_owed": 0.0, "currency": "USD", "credit_model": "tiered"}  # fmt: skip
    unmeasured = SlaSummary(availability_pct=None, coverage_pct=0.0, **base)  # type: ignore[arg-type]
    measured = SlaSummary(availability_pct=89.8, coverage_pct=0.01, **base)  # type: ignore[arg-type]
    assert provisional_words(unmeasured) == "not measured yet · coverage 0.0 %"
    assert provisional_words(measured) == "provisional · coverage 0.0 %"
