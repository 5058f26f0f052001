"""XID 45 judged by its context, as NVIDIA's catalog says (WORKFLOW_XID_45).

The oracle is the generated catalog row for 45 (fleet/xid_catalog.py): its
investigatory column "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)". A lone 45
warns and names the solo action; beside another XID on the same GPU within the window,
the 45 has no verdict of its own and the other XID's verdict, from its own catalog row,
stands.
"""

from __future__ import annotations

from fleet.health import GpuFacts, XidMark, judge_gpu
from fleet.settings.health_section import HealthSection
from fleet.xid import SOLO_WINDOW_S
from fleet.xid_catalog import ROWS

CFG = HealthSection()
ROW = {row[0]: row for row in ROWS}


def catalog_solo_action() -> str:
    """The solo action as the catalog's row for 45 spells it (read here independently)."""
    _, _, _, action, investigatory = ROW[45]
    assert action == "WORKFLOW_XID_45"
    solo = investigatory.split(";")[0]
    assert solo.startswith("Solo: ")
    return solo.removeprefix("Solo: ")


def marks(*spans: tuple[int, float]) -> GpuFacts:
    return GpuFacts(sampled=True, xids={code: XidMark(code, at, at) for code, at in spans})


def test_the_catalog_row_says_restart_the_fabric_manager_when_solo() -> None:
    assert catalog_solo_action() == "RESTART_FM"
    assert "IGNORE (follow other Xid)" in ROW[45][4]


def test_solo_45_warns_with_the_catalogs_action() -> None:
    verdict, reasons, until = judge_gpu(marks((45, 100.0)), CFG, 101.0)
    assert verdict == "warn"
    assert reasons == (
        f"XID 45: preemptive cleanup; alone: {catalog_solo_action()} (restart the fabric manager)",
    )
    assert until == 100.0 + CFG.xid_app_hold_s  # a software remedy: held like an app XID


def test_solo_45_clears_after_the_app_hold_without_a_reset() -> None:
    later = 100.0 + CFG.xid_app_hold_s + 1.0
    assert judge_gpu(marks((45, 100.0)), CFG, later).verdict == "ok"


def test_45_beside_a_hardware_xid_follows_it() -> None:
    assert ROW[79][3] == "RESTART_BM"  # the catalog: 79 fails the GPU until a reboot
    verdict, reasons, _ = judge_gpu(marks((45, 100.0), (79, 101.0)), CFG, 102.0)
    assert (verdict, reasons) == ("fail", ("XID 79: GPU has fallen off the bus",))


def test_45_beside_an_application_xid_follows_it() -> None:
    assert ROW[13][3] == "RESTART_APP"  # the catalog: 13 is the application's
    verdict, reasons, _ = judge_gpu(marks((45, 100.0), (13, 99.0)), CFG, 102.0)
    assert (verdict, reasons) == ("warn", ("XID 13: graphics engine exception",))


def test_45_beside_an_ignored_xid_follows_it_to_no_verdict() -> None:
    ignored = next(row[0] for row in ROWS if row[3] == "IGNORE" and row[2] != "Unused")
    assert judge_gpu(marks((45, 100.0), (ignored, 100.0)), CFG, 101.0).verdict == "ok"


def test_an_xid_outside_the_window_leaves_the_45_solo() -> None:
    before = 100.0 - SOLO_WINDOW_S - 1.0
    verdict, reasons, _ = judge_gpu(marks((45, 100.0), (13, before)), CFG, 101.0)
    assert verdict == "warn"
    assert reasons[0].startswith("XID 45: preemptive cleanup; alone: RESTART_FM")
