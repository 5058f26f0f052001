"""The attached view of all shards: summaries and event batches in, FleetSnapshots out.

Pure bookkeeping with no NATS in it (``cluster.attach`` feeds it), so the rules
are tested on their own. A node's status and state are its shard's, as the one
liveness rule (:mod:`fleet.health.liveness`) judged them there with the shard's
``[health]`` thresholds; the board never judges a node's silence itself. It judges only
its shards': a shard silent for ``[cluster] stale_intervals`` of its own tick
intervals has its nodes shown ``unmonitored`` (nobody watches them, which the rule
reads as the controller's blindness); a node moved to another shard (the
shard count changed) is shown from whichever shard reported it last; node detail
fetched from the owning shard replaces the summary's fields while it is fresh.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, replace
from operator import is_

from cluster.shards import STALE_INTERVALS
from cluster.summary_rows import ShownNode, show
from cluster.wire import NodeSummary, ShardEvents, ShardSummary
from fleet.model import (
    EventRecord,
    FleetSnapshot,
    NodeSnapshot,
    NodeTransition,
    UtilizationSummary,
)

EVENTS_PER_NODE = 50  # as many as a shard's own snapshot keeps for the node screen
DETAIL_FRESH_S = 5.0


@dataclass(frozen=True, slots=True)
class ShardSeen:
    """The newest summary of one shard and when it arrived (the viewer's clock)."""

    summary: ShardSummary
    received_at: float
    readings: int = 0  # GPUs of the part with a utilization reading (the averages' weight)


class ShardBoard:
    """What every shard said last, assembled into one fleet.

    Args:
        stale_intervals: silence, in the shard's tick intervals, after which its nodes
            are ``unmonitored``.
    """

    def __init__(self, stale_intervals: float = STALE_INTERVALS) -> None:
        self.stale_intervals = stale_intervals
        self.shards: dict[tuple[int, int], ShardSeen] = {}  # by (shard, part)
        self._events: defaultdict[str, deque[EventRecord]] = defaultdict(
            lambda: deque(maxlen=EVENTS_PER_NODE)
        )
        self._new_events: list[EventRecord] = []
        self._transitions: list[NodeTransition] = []
        self._details: dict[str, tuple[NodeSnapshot, float]] = {}
        self._owner: dict[str, int] = {}
        self._event_versions: defaultdict[str, int] = defaultdict(int)
        self._shown: dict[str, ShownNode] = {}
        self._nodes: tuple[NodeSnapshot, ...] = ()
        self.conversions = 0  # nodes built anew: their own fields or events changed
        self.restamps = 0  # nodes carried on with new readings (cluster.summary_rows)

    def apply_summary(self, summary: ShardSummary, now: float) -> None:
        """Take a shard's newest summary part (NATS keeps one publisher's messages in order)."""
        readings = sum(1 for n in summary.nodes for g in n.gpus if g.util is not None)
        self.shards[(summary.shard, summary.part)] = ShardSeen(summary, now, readings)
        for key in [k for k in self.shards if k[0] == summary.shard and k[1] >= summary.parts]:
            del self.shards[key]  # the shard has fewer nodes now: its last parts are gone
        for node in summary.nodes:
            self._owner[node.name] = summary.shard

    def nodes_held(self, shard: int, part: int) -> int:
        """Nodes in every kept summary but ``shard``'s part ``part`` (which a new one replaces)."""
        return sum(
            len(seen.summary.nodes) for key, seen in self.shards.items() if key != (shard, part)
        )

    def apply_events(self, batch: ShardEvents, live: bool = True) -> None:
        """Take a batch from the event log; ``live`` ones also go to the next snapshot."""
        for event in batch.events:
            kept = self._events[event.node]
            kept.append(event)
            if len(kept) > 1 and kept[-2].t > event.t:  # as a collector keeps them: by time
                ordered = sorted(kept, key=lambda e: e.t)
                kept.clear()
                kept.extend(ordered)
            self._event_versions[event.node] += 1
        if live:
            self._new_events.extend(batch.events)
            self._transitions.extend(batch.transitions)

    def apply_detail(self, node: NodeSnapshot, now: float) -> None:
        """Full detail of one node, fetched from its shard."""
        self._details[node.name] = (node, now)

    def silent_shards(self, now: float) -> list[int]:
        """Shards whose summaries stopped coming."""
        return sorted({k for (k, _), seen in self.shards.items() if self._silent(seen, now)})

    def shard_count(self) -> int | None:
        """N of the shards' "K/N" as their newest summaries say, None before any came."""
        return max((seen.summary.count for seen in self.shards.values()), default=None)

    def owner_of(self, node: str) -> int | None:
        """The shard that reported ``node`` most recently, None if none did."""
        return self._owner.get(node)

    def _silent(self, seen: ShardSeen, now: float) -> bool:
        return now - seen.received_at > self.stale_intervals * seen.summary.interval

    def snapshot(self, now: float) -> FleetSnapshot:
        """Every node every shard reported, silent shards' nodes ``unmonitored``."""
        chosen: dict[str, tuple[float, NodeSnapshot]] = {}
        for (k, _), seen in sorted(self.shards.items()):
            silent = self._silent(seen, now)
            for summary in seen.summary.nodes:
                taken = seen.summary.taken_at
                if summary.name in chosen and chosen[summary.name][0] >= taken:
                    continue
                node = self._node(summary, now)
                if silent:
                    node = _unmonitored(node, k, seen, now)
                chosen[summary.name] = (taken, node)
        nodes = tuple(chosen[name][1] for name in sorted(chosen))
        if len(nodes) == len(self._nodes) and all(map(is_, nodes, self._nodes)):
            nodes = self._nodes  # no node changed: the same tuple (the identity contract)
        self._nodes = nodes
        if len(self._shown) > len(chosen):  # nodes left the fleet
            self._shown = {n: c for n, c in self._shown.items() if n in chosen}
        snapshot = FleetSnapshot(
            taken_at=now,
            nodes=nodes,
            utilization=self._utilization_summary(nodes, now),
            transitions=tuple(self._transitions),
            new_events=tuple(self._new_events),
        )
        self._transitions.clear()
        self._new_events.clear()
        return snapshot

    def _node(self, summary: NodeSummary, now: float) -> NodeSnapshot:
        detail = self._details.get(summary.name)
        if detail is not None and now - detail[1] <= DETAIL_FRESH_S:
            # The summary is newer for status and verdicts; detail adds the telemetry.
            node = replace(
                detail[0],
                status=summary.status,
                status_reason=summary.status_reason,
                state=summary.state,
                broken_reasons=summary.broken_reasons,
                state_since=summary.state_since,
            )
            return self._with_events(node)
        before = self._shown.get(summary.name)
        version = self._event_versions.get(summary.name, 0)
        shown = show(summary, version, before, self._events.get(summary.name, ()))
        if shown is not before:
            self._shown[summary.name] = shown
            if shown.fresh:
                self.conversions += 1
            else:
                self.restamps += 1
        return shown.node

    def _with_events(self, node: NodeSnapshot) -> NodeSnapshot:
        events = self._events.get(node.name)
        return replace(node, events=tuple(events)) if events and not node.events else node

    def _utilization_summary(
        self, nodes: tuple[NodeSnapshot, ...], now: float
    ) -> UtilizationSummary:
        """Utilization now, and each listening shard's 1-hour and 24-hour averages joined
        as one fleet's: weighted by the GPUs each shard has readings of (what a single
        collector's sample-weighted average does with the same GPUs)."""
        hour, day = _Mean(), _Mean()
        for seen in self.shards.values():
            if not self._silent(seen, now) and seen.summary.part == 0:
                weight = sum(
                    s.readings for (k, _), s in self.shards.items() if k == seen.summary.shard
                )
                hour.add(seen.summary.util_1h, weight)
                day.add(seen.summary.util_24h, weight)
        return UtilizationSummary(self._utilization(nodes), hour.value(), day.value())

    def _utilization(self, nodes: tuple[NodeSnapshot, ...]) -> float | None:
        """``fleet_utilization(nodes)``, from the sums kept with unchanged nodes."""
        total, gpus = 0.0, 0
        for node in nodes:
            shown = self._shown.get(node.name)
            if shown is not None and shown.node is node:
                total, gpus = total + shown.util_sum, gpus + shown.util_gpus
            else:  # detail, or unmonitored: its own GPUs
                values = [g.util_gpu for g in node.gpus if g.util_gpu is not None]
                total, gpus = total + sum(values), gpus + len(values)
        return total / gpus if gpus else None


class _Mean:
    """A weighted mean of the values given (None values and weights of 0 left out)."""

    def __init__(self) -> None:
        self.total, self.weight = 0.0, 0

    def add(self, value: float | None, weight: int) -> None:
        if value is not None and weight > 0:
            self.total, self.weight = self.total + value * weight, self.weight + weight

    def value(self) -> float | None:
        return self.total / self.weight if self.weight else None


def _unmonitored(node: NodeSnapshot, shard: int, seen: ShardSeen, now: float) -> NodeSnapshot:
    count = seen.summary.count
    reason = f"shard {shard}/{count} silent for {now - seen.received_at:.0f} s"
    # GPU verdicts of a node nobody watches are unknown and its readings none, not the
    # last ones heard.
    gpus = tuple(
        replace(
            g,
            verdict="unknown",
            reasons=(),
            util_gpu=None,
            mem_used_bytes=None,
            power_w=None,
            temp_c=None,
        )
        for g in node.gpus
    )
    return replace(node, status="unmonitored", status_reason=reason, gpus=gpus)


def fleet_utilization(nodes: tuple[NodeSnapshot, ...]) -> float | None:
    """Mean GPU utilization over the GPUs that reported one, percent."""
    values = [g.util_gpu for n in nodes for g in n.gpus if g.util_gpu is not None]
    return sum(values) / len(values) if values else None
