"""Port health rules: InfiniBand / RoCE / EFA ports and Ethernet NICs. See docs/health.md."""

from __future__ import annotations

from fleet.health.facts import Judgement, PortFacts
from fleet.health.gpu import NEVER, Finding, summarize
from fleet.settings.health_section import HealthSection


def judge_port(
    facts: PortFacts, expected_rate: float | None, cfg: HealthSection, now: float
) -> Judgement:
    """The verdict of one port at ``now``.

    Args:
        facts: the port's readings.
        expected_rate: the rate (Gb/s) the port should run at, or None when unknown.
        cfg: thresholds.
        now: controller time (seconds).
    """
    if not facts.sampled:
        return Judgement("unknown", (f"{facts.name} no sample yet",), NEVER)
    findings: list[Finding] = []
    if facts.kind == "eth":
        _nic_findings(facts, findings)
        return summarize(findings)
    _link_findings(facts, expected_rate, findings)
    if facts.fatal:
        _fatal_findings(facts, cfg, now, findings)
    _error_rate_findings(facts, cfg, now, findings)
    return summarize(findings)


def _nic_findings(facts: PortFacts, out: list[Finding]) -> None:
    # A NIC may be deliberately unused (a spare management port): down warns only.
    if facts.state == "down":
        out.append(("warn", f"{facts.name} down", NEVER))


def _link_findings(facts: PortFacts, expected_rate: float | None, out: list[Finding]) -> None:
    name = facts.name
    if facts.state is not None and facts.state != "ACTIVE":
        out.append(("fail", f"{name} state {facts.state}", NEVER))
    if facts.phys_state is not None and facts.phys_state != "LinkUp":
        out.append(("fail", f"{name} phys_state {facts.phys_state}", NEVER))
    rate = facts.rate_gbps
    # A link that is not up reports a meaningless rate; the state rule already fails it.
    if facts.state == "ACTIVE" and rate is not None and expected_rate and rate < expected_rate:
        out.append(("warn", f"{name} rate {rate:g} Gb/s < expected {expected_rate:g}", NEVER))


def _fatal_findings(facts: PortFacts, cfg: HealthSection, now: float, out: list[Finding]) -> None:
    for counter, (at, increments) in facts.fatal.items():
        until = at + cfg.port_fatal_hold_s
        if until > now:
            out.append(("fail", f"{facts.name} {counter} +{increments}", until))


def _error_rate_findings(
    facts: PortFacts, cfg: HealthSection, now: float, out: list[Finding]
) -> None:
    name = facts.name
    rate = facts.symbol_error_rate
    if rate is not None and rate > cfg.symbol_error_fail_per_s:
        out.append(("fail", f"{name} symbol_error {rate:.0f}/s", NEVER))
    elif facts.symbol_error_at is not None:
        until = facts.symbol_error_at + cfg.symbol_error_window_s
        if until > now:
            window = f"{cfg.symbol_error_window_s:g} s"
            out.append(("warn", f"{name} symbol errors within the last {window}", until))
    if facts.symbol_error_saturated:
        out.append(("warn", f"{name} symbol_error pegged at its maximum (rate unknown)", NEVER))
    if facts.rcv_error_rate is not None and facts.rcv_error_rate > cfg.port_rcv_errors_warn_per_s:
        out.append(("warn", f"{name} port_rcv_errors {facts.rcv_error_rate:.0f}/s", NEVER))
    discards = facts.xmit_discard_rate
    if discards is not None and discards > cfg.xmit_discards_warn_per_s:
        out.append(("warn", f"{name} port_xmit_discards {discards:.0f}/s", NEVER))
