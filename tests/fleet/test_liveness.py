"""The liveness rule as a table: transport facts and thresholds in, one liveness out."""

from __future__ import annotations

import math

import pytest

from collectors.updates import NodeStatus
from fleet.health import LinkFacts, Liveness, judge_liveness, liveness_of
from fleet.settings.health_section import HealthSection

CFG = HealthSection(stale_intervals=10, stale_unreachable_s=30)
INTERVAL = 1.0
NEVER = -math.inf  # no stall: every second was observed


@pytest.mark.parametrize(
    ("status", "last", "now", "watched_since", "shown", "liveness"),
    [
        # Samples flowing: streaming until stale_intervals (10) intervals of silence.
        ("streaming", 100.0, 101.0, NEVER, "streaming", "streaming"),
        ("streaming", 100.0, 109.9, NEVER, "streaming", "streaming"),
        ("streaming", 100.0, 110.0, NEVER, "stale", "stale"),
        ("streaming", 100.0, 129.9, NEVER, "stale", "stale"),
        ("streaming", 100.0, 130.0, NEVER, "stale", "unreachable"),
        # No sample yet: connecting, whatever the transport says of the channel.
        ("connecting", None, 500.0, NEVER, "connecting", "connecting"),
        ("streaming", None, 500.0, NEVER, "streaming", "connecting"),
        # Connecting again after a session: the old samples do not make it stale.
        ("connecting", 100.0, 115.0, NEVER, "connecting", "connecting"),
        ("connecting", 100.0, 130.0, NEVER, "connecting", "unreachable"),
        # The transport's word on a failed attempt or the controller's own trouble.
        ("unreachable", 100.0, 101.0, NEVER, "unreachable", "unreachable"),
        ("auth-failed", None, 101.0, NEVER, "auth-failed", "unmonitored"),
        ("host-key-mismatch", 100.0, 101.0, NEVER, "host-key-mismatch", "unmonitored"),
        ("agent-error", 100.0, 101.0, NEVER, "agent-error", "unmonitored"),
        ("protocol-error", 100.0, 101.0, NEVER, "protocol-error", "unmonitored"),
        ("unmonitored", 100.0, 101.0, NEVER, "unmonitored", "unmonitored"),
        # After a stall that ended at 200: only silence observed since 200 counts.
        ("streaming", 100.0, 200.0, 200.0, "streaming", "streaming"),
        ("streaming", 100.0, 209.9, 200.0, "streaming", "streaming"),
        ("streaming", 100.0, 210.0, 200.0, "stale", "stale"),
        ("streaming", 100.0, 229.9, 200.0, "stale", "stale"),
        ("streaming", 100.0, 230.0, 200.0, "stale", "unreachable"),
        # A sample after the stall counts from itself.
        ("streaming", 205.0, 214.9, 200.0, "streaming", "streaming"),
        ("streaming", 205.0, 215.0, 200.0, "stale", "stale"),
    ],
)
def test_liveness_table(
    status: NodeStatus,
    last: float | None,
    now: float,
    watched_since: float,
    shown: NodeStatus,
    liveness: Liveness,
) -> None:
    view = judge_liveness(LinkFacts(status, "why", last, INTERVAL), CFG, now, watched_since)
    assert (view.status, view.liveness) == (shown, liveness)


def test_silence_counts_only_what_was_observed() -> None:
    facts = LinkFacts("streaming", "", 100.0, INTERVAL)
    assert judge_liveness(facts, CFG, 215.0).silent_s == 115.0
    after_stall = judge_liveness(facts, CFG, 215.0, watched_since=200.0)
    assert after_stall.silent_s == 15.0
    assert after_stall.reason == "no sample for 15 s"


def test_the_view_says_when_it_may_change() -> None:
    facts = LinkFacts("streaming", "", 100.0, INTERVAL)
    assert judge_liveness(facts, CFG, 105.0).until == 110.0  # turns stale
    assert judge_liveness(facts, CFG, 115.0).until == 130.0  # turns unreachable
    assert judge_liveness(facts, CFG, 105.0, watched_since=200.0).until == 210.0


def test_interval_scales_the_stale_threshold() -> None:
    facts = LinkFacts("streaming", "", 100.0, 0.5)
    assert judge_liveness(facts, CFG, 104.9).liveness == "streaming"
    assert judge_liveness(facts, CFG, 105.0).liveness == "stale"


@pytest.mark.parametrize(
    ("status", "state", "sampled", "liveness"),
    [
        ("streaming", "up", True, "streaming"),
        ("stale", "up", True, "stale"),
        ("stale", "unreachable", True, "unreachable"),
        ("streaming", "unreachable", False, "connecting"),
        ("connecting", "unreachable", True, "connecting"),
        ("unreachable", "unreachable", True, "unreachable"),
        ("agent-error", "unreachable", True, "unmonitored"),
        ("unmonitored", "up", True, "unmonitored"),
    ],
)
def test_a_snapshot_reads_back_the_rules_result(
    status: NodeStatus, state: str, sampled: bool, liveness: Liveness
) -> None:
    assert liveness_of(status, state, sampled) == liveness  # type: ignore[arg-type]
