"""The XID catalog is NVIDIA's published catalog, and verdicts follow its immediate action.

The oracle is the generated catalog data (fleet/xid_catalog.py, NVIDIA's sheet with its
source and date): every code in it is known, and judging a GPU with one XID of a code
gives the verdict that the code's immediate action implies (docs/health.md).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl
import pytest

from fleet.health import GpuFacts, XidMark, judge_gpu, xid_verdict
from fleet.model import EventRecord, FleetSnapshot, NodeSnapshot
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState
from fleet.xid import CATALOG, XID_RECENT_MAX, XidRepeatFilter, describe, xid_text
from fleet.xid_catalog import ROWS, SOURCE_DATE, SOURCE_URL
from history import HistoryRecorder
from history.section import HistorySection
from tests.fleet.feed import NodeFeed

CFG = HealthSection()
HELD_UNTIL_RESET = {"RESET_GPU", "RESTART_BM", "RESTART_VM", "CONTACT_SUPPORT", "CHECK_MECHANICALS"}
REPO = Path(__file__).resolve().parents[2]


def expected_verdict(action: str) -> str:
    """What docs/health.md promises for an immediate action (independent of fleet.xid)."""
    if action == "WORKFLOW_XID_45":
        return "warn"  # judged alone: its solo action, RESTART_FM (test_xid_45_context.py)
    if action in HELD_UNTIL_RESET or (
        action.startswith("WORKFLOW_") and action != "WORKFLOW_XID_45"
    ):
        return "fail"
    if action in ("RESTART_APP", "UPDATE_SWFW", "CHECK_UVM"):
        return "warn"
    if action in ("IGNORE", "XID_154"):
        return "ok"
    assert action == "", f"an action the rules do not know: {action!r}"
    return CFG.unknown_xid_verdict


def one_xid(code: int, at: float = 100.0, count: int = 1) -> GpuFacts:
    return GpuFacts(sampled=True, xids={code: XidMark(code, at, at, count)})


def test_the_data_names_its_source_and_date() -> None:
    text = (REPO / "fleet" / "xid_catalog.py").read_text(encoding="utf-8")
    assert SOURCE_URL in text and "leptonai/gpud" in text
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", SOURCE_DATE)


def test_catalog_covers_every_code_of_the_published_sheet() -> None:
    codes = [row[0] for row in ROWS]
    assert codes == sorted(set(codes)) and codes[0] == 1 and len(codes) >= 172
    assert set(CATALOG) == set(codes)
    for code in codes:
        info = CATALOG[code]
        assert info.description and info.mnemonic and info.applies_to and info.meaning
    in_use = [row for row in ROWS if row[2] != "Unused"]
    assert len(in_use) >= 109
    assert all(CATALOG[row[0]].action == row[3] for row in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: f"xid{row[0]}")
def test_verdict_follows_the_immediate_action(row: tuple[int, str, str, str, str]) -> None:
    code, action = row[0], row[3]
    want = expected_verdict(action)
    verdict, reasons, until = judge_gpu(one_xid(code), CFG, 101.0)
    assert verdict == want
    if want == "ok":
        assert reasons == ()
        return
    assert reasons == (xid_text(code),)
    if action in HELD_UNTIL_RESET or (
        action.startswith("WORKFLOW_") and action != "WORKFLOW_XID_45"
    ):
        assert until == math.inf  # held until evidence of a reset, never by time alone
        assert judge_gpu(one_xid(code), CFG, 1e12).verdict == "fail"
    else:
        assert until == 100.0 + CFG.xid_app_hold_s
        assert judge_gpu(one_xid(code), CFG, until).verdict == "ok"


@pytest.mark.parametrize("code", [46, 109, 110, 136, 143, 151, 155, 156, 158])
def test_codes_once_judged_too_mildly_now_fail_until_reset(code: int) -> None:
    assert judge_gpu(one_xid(code), CFG, 1e9)[0::2] == ("fail", math.inf)


@pytest.mark.parametrize("code", [43, 121, 137, 92, 63, 154])
def test_codes_the_catalog_ignores_give_no_verdict(code: int) -> None:
    assert judge_gpu(one_xid(code), CFG, 101.0)[:2] == ("ok", ())


def test_61_is_unused_and_goes_to_support() -> None:
    info = describe(61)
    assert (info.description, info.action, info.verdict) == ("Unused", "CONTACT_SUPPORT", "fail")
    assert "Unused" in info.applies_to


def test_text_carries_the_meaning() -> None:
    assert xid_text(79) == "XID 79: GPU has fallen off the bus"
    assert xid_text(136) == "XID 136: Link Training Failed"


def test_unknown_xid_uses_the_configured_verdict() -> None:
    assert 9999 not in CATALOG
    assert xid_verdict(9999, HealthSection()) == "warn"
    assert xid_verdict(9999, HealthSection(unknown_xid_verdict="fail")) == "fail"
    assert xid_verdict(169, HealthSection(unknown_xid_verdict="fail")) == "fail"  # no action yet


def test_override_beats_the_catalog() -> None:
    cfg = HealthSection.model_validate({"xid_verdicts": {"13": "ok"}})
    assert xid_verdict(13, cfg) == "ok"
    assert xid_verdict(79, cfg) == "fail"


POLICY = HealthSection.model_validate(
    {"xid_policy": {"94": {"count": 3, "window_s": 60, "verdict": "fail"}}}
)


def test_repetition_policy_escalates_within_its_window() -> None:
    mark = XidMark(94, 0.0, 0.0)
    mark.seen(10.0)
    facts = GpuFacts(sampled=True, xids={94: mark})
    assert judge_gpu(facts, POLICY, 11.0).verdict == "warn"  # twice: the catalog's warn
    mark.seen(20.0)
    verdict, reasons, until = judge_gpu(facts, POLICY, 21.0)
    assert (verdict, reasons, until) == (
        "fail",
        ("XID 94: contained ECC error (x3 within 60 s)",),
        60.0,
    )
    # The first of the three leaves the window: back to the catalog's verdict.
    assert judge_gpu(facts, POLICY, 60.0)[:2] == ("warn", ("XID 94: contained ECC error (x3)",))


def test_repetition_policy_spread_out_never_escalates() -> None:
    mark = XidMark(94, 0.0, 0.0)
    for t in (100.0, 200.0, 300.0):
        mark.seen(t)
    assert judge_gpu(GpuFacts(sampled=True, xids={94: mark}), POLICY, 301.0).verdict == "warn"


def test_policy_config_is_validated() -> None:
    with pytest.raises(ValueError, match="count"):
        HealthSection.model_validate({"xid_policy": {"94": {"count": XID_RECENT_MAX + 1}}})


def test_a_flood_of_identical_xids_is_one_bounded_mark() -> None:
    mark = XidMark(13, 5.0, 5.0)
    for i in range(100_000):
        mark.seen(6.0 + i)
    assert (mark.count, mark.first_at, mark.last_at) == (100_001, 5.0, 100_005.0)
    assert len(mark.recent) == XID_RECENT_MAX
    reasons = judge_gpu(GpuFacts(sampled=True, xids={13: mark}), CFG, 100_006.0).reasons
    assert reasons == ("XID 13: graphics engine exception (x100001)",)


def test_xid_109_holds_past_the_old_warn_until_reset(state: FleetState, feed: NodeFeed) -> None:
    state.ingest(feed.event("xid", gpu=3, code=109))
    state.ingest(feed.sample(advance=CFG.xid_app_hold_s + 60.0))
    gpu = state.snapshot(feed.t).nodes[0].gpus[3]
    assert (gpu.verdict, gpu.reasons) == ("fail", ("XID 109: context switch timeout",))
    state.ingest(feed.hello())  # the reset restarted the agent
    state.ingest(feed.sample())
    assert state.snapshot(feed.t).nodes[0].gpus[3].verdict == "ok"


def test_repeated_events_count_on_one_mark(state: FleetState, feed: NodeFeed) -> None:
    for _ in range(500):
        state.ingest(feed.event("xid", gpu=0, code=31))
    state.ingest(feed.sample())
    gpu = state.snapshot(feed.t).nodes[0].gpus[0]
    assert (gpu.verdict, gpu.reasons) == ("warn", ("XID 31: GPU memory page fault (x500)",))


def xid_event(t: float, code: int = 13, gpu: int = 0) -> EventRecord:
    return EventRecord(t, "gpu-001", "xid", gpu, f"GPU-{gpu}", code, xid_text(code))


def test_a_burst_of_identical_xids_is_two_history_rows(tmp_path: Path) -> None:
    t0 = 1_790_000_000.0
    repeats = XidRepeatFilter(window_s=60.0)
    recorder = HistoryRecorder(tmp_path, HistorySection(), clock=lambda: t0)
    flood = tuple(xid_event(t0 + i / 1000) for i in range(100_000))  # 100 s of XID 13
    other = (
        xid_event(t0 + 1, code=31),
        xid_event(t0 + 2, gpu=1),
        EventRecord(t0, "gpu-001", "bye"),
    )
    node = NodeSnapshot("gpu-001", "streaming")
    recorder.record(repeats.for_history(FleetSnapshot(t0 + 100, (node,), new_events=flood + other)))
    recorder.record(repeats.for_history(FleetSnapshot(t0 + 200, (node,)), final=True))
    recorder.close()
    rows = pl.read_parquet(tmp_path / "events" / "**" / "*.parquet").sort("ts", "gpu", "code")
    table = rows.select("kind", "gpu", "code").rows()
    assert sorted(table, key=str) == sorted(
        [
            ("xid", 0, 13),
            ("xid", 0, 31),
            ("xid", 1, 13),
            ("bye", None, None),
            ("xid_repeats", 0, 13),
        ],
        key=str,
    )
    summary = rows.filter(pl.col("kind") == "xid_repeats")["detail"].item()
    assert summary.startswith("XID 13 repeated 99999 more times until ")


def test_repeats_after_a_quiet_window_start_a_new_burst() -> None:
    repeats = XidRepeatFilter(window_s=60.0)
    assert len(repeats.filter((xid_event(0.0), xid_event(1.0)), 1.0)) == 1
    later = repeats.filter((xid_event(100.0),), 100.0)
    assert [(e.kind, e.t) for e in later] == [("xid_repeats", 1.0), ("xid", 100.0)]
    assert repeats.filter((), 161.0) == ()  # the new burst had no repeats: nothing to count
