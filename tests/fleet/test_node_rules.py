"""Node rules: unreachable, broken or up (docs/health.md, "Node state")."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from collectors.updates import NodeStatus
from fleet.health import GpuVerdictView, Judgement, NodeStatusView, judge_node, node_status_view
from fleet.model import VERDICTS, Verdict
from fleet.settings.health_section import HealthSection

CFG = HealthSection()
OK_PORT = Judgement("ok", (), math.inf)


def view(
    status: NodeStatus = "streaming", last: float | None = 100.0, now: float = 100.0
) -> NodeStatusView:
    return node_status_view(status, "", last, 1.0, CFG, now)


@given(st.lists(st.sampled_from(VERDICTS), max_size=10), st.integers(1, 10))
def test_broken_exactly_when_too_few_gpus_are_healthy(
    verdicts: list[Verdict], expected: int
) -> None:
    gpus = [GpuVerdictView(i, v, (v,)) for i, v in enumerate(verdicts)]
    state, reasons, _ = judge_node(view(), gpus, expected, [OK_PORT], CFG, 100.0)
    healthy = sum(v in ("ok", "warn") for v in verdicts)
    assert (state == "broken") == (healthy < expected)
    assert (state == "up") == (reasons == ())


def test_a_failing_port_breaks_the_node_with_its_reasons() -> None:
    gpus = [GpuVerdictView(i, "ok", ()) for i in range(8)]
    port = Judgement("fail", ("mlx5_0/1 state DOWN",), math.inf)
    state, reasons, _ = judge_node(view(), gpus, 8, [port], CFG, 100.0)
    assert (state, reasons) == ("broken", ("mlx5_0/1 state DOWN",))
    warn = Judgement("warn", ("mlx5_0/1 rate 200 Gb/s < expected 400",), math.inf)
    assert judge_node(view(), gpus, 8, [warn], CFG, 100.0).state == "up"


def test_transport_failures_are_unreachable_whatever_the_gpus() -> None:
    gpus = [GpuVerdictView(i, "ok", ()) for i in range(8)]
    statuses: tuple[NodeStatus, ...] = (
        "unreachable",
        "auth-failed",
        "host-key-mismatch",
        "agent-error",
        "protocol-error",
    )
    for status in statuses:
        judged = judge_node(view(status), gpus, 8, [], CFG, 100.0)
        assert judged.state == "unreachable"


def test_stale_view_and_deadline() -> None:
    fresh = view(last=100.0, now=102.0)
    assert (fresh.status, fresh.until) == ("streaming", 103.0)
    stale = view(last=100.0, now=103.0)
    assert stale.status == "stale" and stale.reason == "no sample for 3 s"
    gpus = [GpuVerdictView(0, "ok", ())]
    judged = judge_node(stale, gpus, 1, [], CFG, 103.0)
    assert (judged.state, judged.until) == ("up", 100.0 + CFG.stale_unreachable_s)
