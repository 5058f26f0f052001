"""Node rules: is a node up, broken or unreachable? See docs/health.md.

A node is **unreachable** while its transport status says so, before its first
sample, or when the liveness rule (:mod:`fleet.health.liveness`) finds it silent for
``stale_unreachable_s``. Otherwise it is **broken** when fewer than its expected GPUs
are healthy (ok or warn) or when a port holds a fail verdict, and **up** otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from collectors.updates import NodeStatus
from fleet.health.facts import Judgement
from fleet.health.gpu import NEVER
from fleet.health.liveness import BLIND_STATUSES, LinkFacts, NodeStatusView, judge_liveness
from fleet.model import NodeState, Verdict
from fleet.settings.health_section import HealthSection

# The transport's words that make a node unreachable: a failed attempt, or the
# controller's own trouble with it (the liveness rule's blind statuses, less the cluster's
# "unmonitored", which a shard's own state never carries).
_FAILED: frozenset[NodeStatus] = frozenset(("unreachable",))
_CLUSTER_ONLY: frozenset[NodeStatus] = frozenset(("unmonitored",))
UNREACHABLE_STATUSES: frozenset[NodeStatus] = _FAILED | (BLIND_STATUSES - _CLUSTER_ONLY)
HEALTHY: frozenset[Verdict] = frozenset(("ok", "warn"))


class NodeJudgement(NamedTuple):
    """A node's state, its reasons (the evidence), and when it may change on its own."""

    state: NodeState
    reasons: tuple[str, ...]
    until: float


class GpuVerdictView(NamedTuple):
    """What the node rule needs of one GPU."""

    gpu: int  # the GPU's index on the node
    verdict: Verdict
    reasons: tuple[str, ...]


def node_status_view(
    status: NodeStatus,
    reason: str,
    last_sample_at: float | None,
    interval: float,
    cfg: HealthSection,
    now: float,
    watched_since: float = -NEVER,
) -> NodeStatusView:
    """The liveness rule on the state's facts of one node (see :func:`judge_liveness`)."""
    facts = LinkFacts(status, reason, last_sample_at, interval)
    return judge_liveness(facts, cfg, now, watched_since)


def judge_node(
    view: NodeStatusView,
    gpus: Sequence[GpuVerdictView],
    expected_gpus: int,
    ports: Sequence[Judgement],
    cfg: HealthSection,
    now: float,
) -> NodeJudgement:
    """The node's state from its status, its GPUs' verdicts and its ports' verdicts."""
    unreachable = _unreachable_reason(view)
    if unreachable is not None:
        return NodeJudgement("unreachable", (unreachable,), NEVER)
    until = NEVER if view.silent_s is None else now - view.silent_s + cfg.stale_unreachable_s
    reasons = _gpu_reasons(gpus, expected_gpus)
    for port in ports:
        if port.verdict == "fail":
            reasons.extend(r for r in port.reasons if r)
    if reasons:
        return NodeJudgement("broken", tuple(reasons), until)
    return NodeJudgement("up", (), until)


def _unreachable_reason(view: NodeStatusView) -> str | None:
    if view.status in UNREACHABLE_STATUSES:
        return f"{view.status}: {view.reason}" if view.reason else view.status
    if view.silent_s is None:
        return f"{view.status}: no sample yet" if view.status != "streaming" else "no sample yet"
    if view.liveness == "unreachable":
        return f"no sample for {view.silent_s:.0f} s"
    return None


def _gpu_reasons(gpus: Sequence[GpuVerdictView], expected: int) -> list[str]:
    healthy = sum(1 for g in gpus if g.verdict in HEALTHY)
    if healthy >= expected:
        return []
    reasons = [f"{healthy} of {expected} GPUs healthy"]
    if len(gpus) < expected:
        reasons.append(f"{len(gpus)} of {expected} GPUs visible")
    for gpu in gpus:
        if gpu.verdict not in HEALTHY:
            reasons.append(f"GPU {gpu.gpu}: " + "; ".join(gpu.reasons or (gpu.verdict,)))
    return reasons
