"""GPU rules as pure functions of GpuFacts (docs/health.md)."""

from __future__ import annotations

import math

from fleet.health import GpuFacts, XidMark, judge_gpu
from fleet.settings.health_section import HealthSection

CFG = HealthSection()


def facts(**values: object) -> GpuFacts:
    f = GpuFacts(sampled=True)
    for name, value in values.items():
        setattr(f, name, value)
    return f


def test_unknown_until_a_first_sample() -> None:
    assert judge_gpu(GpuFacts(), CFG, 0.0).verdict == "unknown"


def test_healthy_gpu_is_ok_without_reasons() -> None:
    assert judge_gpu(facts(ecc_unc_vol=0, remap_pending=False), CFG, 0.0)[:2] == ("ok", ())


def test_volatile_uncorrected_ecc_fails() -> None:
    verdict, reasons, _ = judge_gpu(facts(ecc_unc_vol=2), CFG, 0.0)
    assert (verdict, reasons) == ("fail", ("uncorrected ECC (volatile) = 2",))


def test_remap_pending_warns_and_failure_fails() -> None:
    assert judge_gpu(facts(remap_pending=True), CFG, 0.0)[:2] == ("warn", ("row remap pending",))
    verdict, reasons, _ = judge_gpu(facts(remap_pending=True, remap_failure=True), CFG, 0.0)
    assert verdict == "fail" and reasons[0] == "row remap failure"


def test_retired_pages_pending_warns_and_too_many_fail() -> None:
    assert judge_gpu(facts(retired_pending=True), CFG, 0.0).verdict == "warn"
    assert judge_gpu(facts(retired_pages=63), CFG, 0.0).verdict == "fail"
    assert judge_gpu(facts(retired_pages=62), CFG, 0.0).verdict == "ok"


def test_clock_reasons_hw_bits_warn_routine_bits_do_not() -> None:
    assert judge_gpu(facts(clock_reasons=0x40 | 0x1), CFG, 0.0)[:2] == (
        "warn",
        ("HW thermal slowdown",),
    )
    assert judge_gpu(facts(clock_reasons=0x4 | 0x20), CFG, 0.0).verdict == "ok"


def test_recovery_actions() -> None:
    assert judge_gpu(facts(recovery_action=2), CFG, 0.0)[:2] == (
        "fail",
        ("recovery action: node reboot",),
    )
    assert judge_gpu(facts(recovery_action=3), CFG, 0.0).verdict == "warn"
    assert judge_gpu(facts(recovery_action=0), CFG, 0.0).verdict == "ok"


def test_nvlink_crc_thresholds_per_link() -> None:
    fail = judge_gpu(facts(nvlink_crc_link_rates=(153.0, 0.0, 0.0)), CFG, 0.0)
    assert fail[:2] == ("fail", ("NVLink CRC 153/s on 1 link",))
    warn = judge_gpu(facts(nvlink_crc_link_rates=(5.0, 2.0)), CFG, 0.0)
    assert warn[:2] == ("warn", ("NVLink CRC 5/s on 2 links",))
    assert judge_gpu(facts(nvlink_crc_link_rates=(0.0,)), CFG, 0.0).verdict == "ok"


def test_nvlink_replay_fails_for_the_hold_then_clears() -> None:
    f = facts(nvlink_error_at=100.0, nvlink_error_note="replay +3")
    verdict, reasons, until = judge_gpu(f, CFG, 150.0)
    assert (verdict, reasons, until) == (
        "fail",
        ("NVLink replay +3",),
        100.0 + CFG.nvlink_error_hold_s,
    )
    assert judge_gpu(f, CFG, until).verdict == "ok"


def test_nvlink_links_down_fail() -> None:
    verdict, reasons, _ = judge_gpu(facts(nvlink_active=17, nvlink_total=18), CFG, 0.0)
    assert (verdict, reasons) == ("fail", ("NVLink 1 of 18 links down",))


def test_application_xid_warns_for_its_hold() -> None:
    f = facts(xids={13: XidMark(13, 10.0, 20.0, 2)})
    verdict, reasons, until = judge_gpu(f, CFG, 30.0)
    assert (verdict, reasons) == ("warn", ("XID 13: graphics engine exception (x2)",))
    assert until == 20.0 + CFG.xid_app_hold_s
    assert judge_gpu(f, CFG, until).verdict == "ok"


def test_hardware_xid_holds_without_end_unless_configured() -> None:
    f = facts(xids={79: XidMark(79, 10.0, 10.0)})
    held = judge_gpu(f, CFG, 10.0 + 86_400 * 30)
    assert (held.verdict, held.until) == ("fail", math.inf)
    timed = HealthSection(xid_hardware_hold_s=60.0)
    assert judge_gpu(f, timed, 69.0).verdict == "fail"
    assert judge_gpu(f, timed, 70.0).verdict == "ok"


def test_xid_94_warns() -> None:
    assert judge_gpu(facts(xids={94: XidMark(94, 1.0, 1.0)}), CFG, 2.0).verdict == "warn"


def test_lost_is_worst_and_keeps_other_reasons() -> None:
    f = facts(lost=True, lost_reason="GPU lost", xids={79: XidMark(79, 1.0, 1.0)})
    verdict, reasons, _ = judge_gpu(f, CFG, 2.0)
    assert verdict == "lost"
    assert reasons == ("GPU lost", "XID 79: GPU has fallen off the bus")


def test_reasons_are_ordered_worst_first() -> None:
    f = facts(clock_reasons=0x8, ecc_unc_vol=1)
    assert judge_gpu(f, CFG, 0.0).reasons == ("uncorrected ECC (volatile) = 1", "HW slowdown")
