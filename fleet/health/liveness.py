"""A node's liveness: the one rule that says whether a node is heard from. See docs/health.md.

The transport reports facts and decides nothing: its last word on the node's
connection (``connecting`` until the agent's first line, ``streaming`` once lines flow
on an open channel, or the error that ended an attempt), each with its time, and the
time of the node's latest sample. This rule alone turns those facts and the
``[health]`` thresholds into the node's :data:`Liveness`; the state, the dashboard,
history and the cluster board all take it from here.

The rule also knows the controller's own blindness: silence is counted from the later
of the node's last sample and the end of the controller's last stall (see
:class:`fleet.watchdog.TickWatchdog`). Time the controller could not observe never makes
a node stale or unreachable; only what it observed after the stall ended does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from collectors.updates import NodeStatus
from fleet.health.gpu import NEVER
from fleet.model import NodeState
from fleet.settings.health_section import HealthSection

Liveness = Literal["connecting", "streaming", "stale", "unreachable", "unmonitored"]
"""Whether a node is heard from: ``connecting`` (no sample yet), ``streaming``,
``stale`` (connected, samples stopped for ``stale_intervals`` intervals),
``unreachable`` (a connection attempt failed, or silent for ``stale_unreachable_s``) or
``unmonitored`` (the controller cannot observe it for a reason of its own side)."""

BLIND_STATUSES: frozenset[NodeStatus] = frozenset(
    ("auth-failed", "host-key-mismatch", "agent-error", "protocol-error", "unmonitored")
)
"""Transport (or cluster) statuses that say nothing of the node, only of the controller:
its credentials, its idea of the host key, its agent or protocol, its shard."""


@dataclass(frozen=True, slots=True)
class LinkFacts:
    """What the transport observed of one node, as the state keeps it.

    Attributes:
        status: the transport's last word on the connection.
        reason: that word's reason, in words.
        last_sample_at: when the latest sample arrived (controller clock); None: never.
        interval: the agent's sample interval in seconds.
    """

    status: NodeStatus
    reason: str
    last_sample_at: float | None
    interval: float


class NodeStatusView(NamedTuple):
    """The rule's result: the status shown for a node and its liveness.

    ``status`` is the transport's word, or ``stale`` when samples stopped on an open
    connection; ``silent_s`` counts only silence the controller observed.
    """

    status: NodeStatus
    reason: str
    silent_s: float | None  # observed seconds without a sample (None: never sampled)
    until: float  # when this view may change without new data
    liveness: Liveness = "streaming"


def silence_deadlines(
    observed_from: float, interval: float, cfg: HealthSection
) -> tuple[float, float]:
    """When a node silent since ``observed_from`` turns stale, and when unreachable."""
    return observed_from + cfg.stale_intervals * interval, observed_from + cfg.stale_unreachable_s


def judge_liveness(
    facts: LinkFacts, cfg: HealthSection, now: float, watched_since: float = -NEVER
) -> NodeStatusView:
    """The node's status view and liveness at ``now``.

    Args:
        facts: what the transport observed.
        cfg: the ``[health]`` thresholds (``stale_intervals``, ``stale_unreachable_s``).
        now: the controller's clock.
        watched_since: when the controller's last stall ended; silence before it was
            not observed and does not count.
    """
    status, reason = facts.status, facts.reason
    if status in BLIND_STATUSES or status == "unreachable":
        # The transport's word settles it: a failed attempt, or the controller's own trouble.
        liveness: Liveness = "unreachable" if status == "unreachable" else "unmonitored"
        return NodeStatusView(status, reason, _silent(facts, now, watched_since), NEVER, liveness)
    if facts.last_sample_at is None:
        return NodeStatusView(status, reason, None, NEVER, "connecting")
    observed_from = max(facts.last_sample_at, watched_since)
    silent = now - observed_from
    stale_at, unreachable_at = silence_deadlines(observed_from, facts.interval, cfg)
    if now >= unreachable_at:
        if status == "streaming":
            return NodeStatusView("stale", _silence(silent), silent, NEVER, "unreachable")
        return NodeStatusView(status, reason, silent, NEVER, "unreachable")
    if status != "streaming":  # connecting again: the samples it had were another session's
        return NodeStatusView(status, reason, silent, unreachable_at, "connecting")
    if now >= stale_at:
        return NodeStatusView("stale", _silence(silent), silent, unreachable_at, "stale")
    return NodeStatusView(status, reason, silent, stale_at, "streaming")


def liveness_of(status: NodeStatus, state: NodeState, sampled: bool) -> Liveness:
    """A judged node's liveness, read back from its snapshot (status, state, sampled).

    For readers that hold only the snapshot (history): the snapshot's status and state
    were set by :func:`judge_liveness` and the node rule, so this reads the rule's
    result back rather than deciding anew.
    """
    if status in BLIND_STATUSES:
        return "unmonitored"
    if status == "unreachable":
        return "unreachable"
    if status == "connecting" or not sampled:
        return "connecting"
    if state == "unreachable":
        return "unreachable"
    return "stale" if status == "stale" else "streaming"


def _silent(facts: LinkFacts, now: float, watched_since: float) -> float | None:
    if facts.last_sample_at is None:
        return None
    return now - max(facts.last_sample_at, watched_since)


def _silence(seconds: float) -> str:
    return f"no sample for {seconds:.0f} s"
