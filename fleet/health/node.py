"""Node rules: is a node up, broken or unreachable? See docs/health.md.

A node is **unreachable** while its transport status says so, before its first
sample, or when the liveness rule (:mod:`fleet.health.liveness`) finds it silent for
``stale_unreachable_s``. Otherwise it is **broken** when fewer than its expected GPUs
are healthy (ok or warn) or when a port holds a fail verdict, and **up** otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

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


# The reason of a node not heard from yet since it was first tried: start-up, not failure.
NO_SAMPLE_YET = "no sample yet"


def starting_up(state: str, reasons: Sequence[str]) -> bool:
    """Whether a node's state is start-up (connecting, no sample yet), not a failure."""
    return state == "unreachable" and any(r.endswith(NO_SAMPLE_YET) for r in reasons)


class NodeJudgement(NamedTuple):
    """A node's state, its reasons (the evidence), and when it may change on its own."""

    state: NodeState
    reasons: tuple[str, ...]
    until: float


class GpuVerdictView(msgspec.Struct, frozen=True, gc=False):
    """What the node rule needs of one GPU.

    Made for each GPU of a node whose briefs changed and kept until they change again;
    it holds a number and strings only, so the cyclic collector need not track it (a
    NamedTuple is tracked: ~2,000 objects at 3,000 nodes in bench/bench_gc_tracked.py).
    """

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
    nvml_error: str | None = None,
) -> NodeJudgement:
    """The node's state from its status, its GPUs' verdicts and its ports' verdicts.

    ``nvml_error``: the NVML error the agent reported when it could not open NVML
    (``NVMLError_LibraryNotFound``); a node short of GPUs then names it first, as
    ``gpufleet check`` does.
    """
    unreachable = _unreachable_reason(view)
    if unreachable is not None:
        return NodeJudgement("unreachable", (unreachable,), NEVER)
    until = NEVER if view.silent_s is None else now - view.silent_s + cfg.stale_unreachable_s
    reasons = _gpu_reasons(gpus, expected_gpus)
    if reasons and nvml_error is not None and len(gpus) < expected_gpus:
        reasons.insert(0, f"no NVML ({nvml_error})")
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
        if view.status == "streaming":
            return NO_SAMPLE_YET
        return f"{view.status}: {NO_SAMPLE_YET}"
    if view.liveness == "unreachable":
        return f"no sample for {view.silent_s:.0f} s"
    return None


def _gpu_reasons(gpus: Sequence[GpuVerdictView], expected: int) -> list[str]:
    """Each failing GPU's cause first (``GPU 5 lost (XID 79)``), the counts last: a
    narrow column shows the cause, not "7 of 8 GPUs healthy" and an exception name."""
    healthy = sum(1 for g in gpus if g.verdict in HEALTHY)
    if healthy >= expected:
        return []
    reasons = [gpu_cause(gpu) for gpu in gpus if gpu.verdict not in HEALTHY]
    reasons.append(f"{healthy} of {expected} GPUs healthy")
    if len(gpus) < expected:
        reasons.append(f"{len(gpus)} of {expected} GPUs visible")
    return reasons


_XID = re.compile(r"^XID (\d+)")
_LOST = re.compile(r"^GPU lost \((.+)\)$")


def gpu_cause(gpu: GpuVerdictView) -> str:
    """One GPU's failure, cause first: ``GPU 5 lost (XID 79)``, ``GPU 2 XID 48: ...``;
    the other reasons follow after a colon."""
    xids = [m.group(1) for m in map(_XID.match, gpu.reasons) if m]
    if gpu.verdict == "lost":
        # The XID says why it fell off; without one, the agent's own word does.
        notes = [m.group(1) for m in map(_LOST.match, gpu.reasons) if m]
        why = f"XID {', '.join(xids)}" if xids else ", ".join(notes)
        # What each XID means stays as evidence, after the cause.
        rest = [r.partition(": ")[2] or r if _XID.match(r) else r for r in gpu.reasons]
        rest = [r for r in rest if r != "GPU lost" and not _LOST.match(r)]
        head = f"GPU {gpu.gpu} lost" + (f" ({why})" if why else "")
        return head + (": " + "; ".join(rest) if rest else "")
    return f"GPU {gpu.gpu} " + "; ".join(gpu.reasons or (gpu.verdict,))
