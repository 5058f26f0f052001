"""GPU health rules: facts in, (verdict, reasons, until) out. docs/health.md is the table.

Each rule returns findings; the GPU's verdict is the worst of them, and a verdict
clears when its cause clears: a flag or counter rule clears with the reading, a held
rule (application XIDs, NVLink replay/recovery) when its hold expires, a hardware XID
when the GPU is reset or swapped (the state drops the mark, see ``fleet.state``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from fleet.health.facts import GpuFacts, Judgement, XidMark
from fleet.model import VERDICT_RANK, Verdict
from fleet.settings.health_section import HealthSection
from fleet.xid import SOLO_WINDOW_S, SOLO_XID, describe

Finding = tuple[Verdict, str, float]  # verdict, reason, until
NEVER = math.inf

CLOCK_REASON_NAMES = {0x8: "HW slowdown", 0x40: "HW thermal slowdown", 0x80: "HW power brake"}
RECOVERY_ACTION_NAMES = {
    1: "GPU reset",
    2: "node reboot",
    3: "drain P2P",
    4: "drain and reset",
    5: "recover IMEX domain",
    6: "bus reset",
    7: "system reboot",
}


def judge_gpu(facts: GpuFacts, cfg: HealthSection, now: float) -> Judgement:
    """The verdict of one GPU at ``now``.

    Returns:
        ``unknown`` before a first sample, ``lost`` when the GPU fell off, else the
        worst finding (``ok`` with no reasons when nothing is wrong).
    """
    if not facts.sampled:
        return Judgement("unknown", ("no sample yet",), NEVER)
    findings: list[Finding] = []
    if facts.lost:
        findings.append(("lost", facts.lost_reason or "GPU lost", NEVER))
    if facts.xids:
        _xid_findings(facts.xids.values(), cfg, now, findings)
    _memory_findings(facts, cfg, findings)
    _nvlink_findings(facts, cfg, now, findings)
    if facts.clock_reasons:
        _clock_findings(facts.clock_reasons, cfg, findings)
    if facts.recovery_action:
        _recovery_findings(facts.recovery_action, cfg, findings)
    return summarize(findings)


OK = Judgement("ok", (), NEVER)


def summarize(findings: list[Finding]) -> Judgement:
    """The worst verdict of ``findings``, reasons worst first, and the earliest expiry."""
    if not findings:
        return OK
    ordered = sorted(findings, key=lambda f: -VERDICT_RANK[f[0]])
    until = min(f[2] for f in findings)
    return Judgement(ordered[0][0], tuple(f[1] for f in ordered), until)


def xid_verdict(code: int, cfg: HealthSection) -> Verdict:
    """The configured verdict of an XID: override, else the catalog's, else the unknown default."""
    override = cfg.xid_verdicts.get(code)
    if override is not None:
        return override
    verdict = describe(code).verdict
    return cfg.unknown_xid_verdict if verdict is None else verdict


def xid_expiry(mark: XidMark, cfg: HealthSection) -> float:
    """When a mark stops counting: hardware XIDs hold until reset unless a hold is set."""
    if describe(mark.code).xid_class == "hardware":
        hold = cfg.xid_hardware_hold_s
        return NEVER if hold is None else mark.last_at + hold
    return mark.last_at + cfg.xid_app_hold_s


def _xid_findings(
    marks: Iterable[XidMark], cfg: HealthSection, now: float, out: list[Finding]
) -> None:
    marks = list(marks)
    for mark in marks:
        if mark.code == SOLO_XID and any(_alongside(m, mark) for m in marks):
            continue  # the catalog's XID 45 workflow: not solo, follow the other XID
        finding = _xid_finding(mark, cfg, now)
        if finding is not None:
            out.append(finding)


def _alongside(other: XidMark, mark: XidMark) -> bool:
    """``other`` is another XID seen around the time of ``mark`` (within a minute)."""
    return (
        other.code != mark.code
        and other.first_at <= mark.last_at + SOLO_WINDOW_S
        and other.last_at >= mark.first_at - SOLO_WINDOW_S
    )


def _xid_finding(mark: XidMark, cfg: HealthSection, now: float) -> Finding | None:
    verdict, until = xid_verdict(mark.code, cfg), xid_expiry(mark, cfg)
    if until <= now:
        verdict = "ok"
    note = f" (x{mark.count})" if mark.count > 1 else ""
    policy = cfg.xid_policy.get(mark.code)
    if policy is not None and VERDICT_RANK[policy.verdict] > VERDICT_RANK[verdict]:
        kept = list(mark.recent)
        if len(kept) >= policy.count and kept[-policy.count] > now - policy.window_s:
            verdict, until = policy.verdict, kept[-policy.count] + policy.window_s
            note = f" (x{mark.within(policy.window_s, now)} within {policy.window_s:g} s)"
    if verdict == "ok":
        return None
    return (verdict, f"XID {mark.code}: {describe(mark.code).meaning}{note}", until)


def _memory_findings(facts: GpuFacts, cfg: HealthSection, out: list[Finding]) -> None:
    if facts.ecc_unc_vol is not None and facts.ecc_unc_vol >= cfg.ecc_unc_volatile_fail:
        out.append(("fail", f"uncorrected ECC (volatile) = {facts.ecc_unc_vol}", NEVER))
    if facts.remap_failure:
        out.append(("fail", "row remap failure", NEVER))
    if facts.remap_pending:
        out.append(("warn", "row remap pending", NEVER))
    if facts.remap_unc is not None and facts.remap_unc >= cfg.remap_unc_warn:
        out.append(("warn", f"{facts.remap_unc} rows remapped (uncorrectable)", NEVER))
    if facts.retired_pages is not None and facts.retired_pages >= cfg.retired_pages_fail:
        out.append(("fail", f"{facts.retired_pages} retired pages", NEVER))
    if facts.retired_pending:
        out.append(("warn", "page retirement pending", NEVER))


def _nvlink_findings(facts: GpuFacts, cfg: HealthSection, now: float, out: list[Finding]) -> None:
    total, active = facts.nvlink_total, facts.nvlink_active
    if total and active is not None and active < total:
        out.append(("fail", f"NVLink {total - active} of {total} links down", NEVER))
    if facts.nvlink_error_at is not None:
        until = facts.nvlink_error_at + cfg.nvlink_error_hold_s
        if until > now:
            out.append(("fail", f"NVLink {facts.nvlink_error_note}", until))
    _crc_findings(facts, cfg, out)


def _crc_findings(facts: GpuFacts, cfg: HealthSection, out: list[Finding]) -> None:
    rates = facts.nvlink_crc_link_rates
    if not rates and facts.nvlink_crc_rate is not None:
        rates = (facts.nvlink_crc_rate,)  # per-link values unknown: judge the sum
    bad = [r for r in rates if r > cfg.nvlink_crc_warn_per_s]
    if not bad:
        return
    worst = max(bad)
    verdict: Verdict = "fail" if worst >= cfg.nvlink_crc_fail_per_s else "warn"
    links = "link" if len(bad) == 1 else "links"
    out.append((verdict, f"NVLink CRC {worst:.0f}/s on {len(bad)} {links}", NEVER))


def _clock_findings(reasons: int, cfg: HealthSection, out: list[Finding]) -> None:
    for bit, name in CLOCK_REASON_NAMES.items():
        if reasons & bit & cfg.clock_reasons_warn_mask:
            out.append(("warn", name, NEVER))


def _recovery_findings(action: int, cfg: HealthSection, out: list[Finding]) -> None:
    name = RECOVERY_ACTION_NAMES.get(action, f"action {action}")
    if action in cfg.recovery_actions_fail:
        out.append(("fail", f"recovery action: {name}", NEVER))
    elif action in cfg.recovery_actions_warn:
        out.append(("warn", f"recovery action: {name}", NEVER))
