"""FleetState: node updates in, FleetSnapshots out."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from collectors.protocol import Bye, Error, Event, Hello, Jobs, Sample
from collectors.updates import CONNECTED_STATUSES, NodeMessage, NodeUpdate
from fleet.jobs import JobInterval, LiveJobs
from fleet.model import (
    EventRecord,
    FleetSnapshot,
    NodeSnapshot,
    NodeTransition,
    UtilizationSummary,
    evolve,
)
from fleet.settings.health_section import HealthSection
from fleet.state.assemble import refresh
from fleet.state.columns import GpuArena
from fleet.state.node import NodeSpec, NodeTrack
from fleet.state.port_columns import PortColumns
from fleet.state.restamp import restamped
from fleet.watchdog import TickWatchdog


class FleetState:
    """The live fleet: cheap ``ingest`` per update, ``snapshot`` once per tick.

    ``ingest`` keeps the latest decoded rows, writes the fast GPU values into the
    fleet's columns and advances counters; it builds no snapshot objects. ``snapshot``
    re-freezes only nodes that received data or whose holds or staleness deadlines
    passed, and reuses every other NodeSnapshot object; GPU and port objects are built
    only when a reader asks for them. Not thread-safe: call both from the event loop.

    Given the tick interval ``tick_s`` (or a ``watchdog`` shared with the history
    recorder, as the runtime does), the state watches its own ticks: after a tick
    that came late (the controller stalled, see :class:`fleet.watchdog.TickWatchdog`),
    every node's silence is counted from the stall's end, so the controller's blindness
    never makes a node stale or unreachable. Without it (replayed or synthetic ticks),
    every tick counts as observed.
    """

    def __init__(
        self,
        nodes: Sequence[NodeSpec],
        health: HealthSection,
        *,
        event_history: int = 200,
        tick_s: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        watchdog: TickWatchdog | None = None,
    ) -> None:
        self._health = health
        if watchdog is None and tick_s is not None:
            watchdog = TickWatchdog(tick_s, monotonic=monotonic)
        self._watchdog = watchdog
        self._event_history = event_history
        self._arena = GpuArena(8 * max(len(nodes), 8))
        self._ports = PortColumns(health, 10 * max(len(nodes), 8))
        self._nodes: dict[str, NodeTrack] = {}
        for spec in nodes:
            self._nodes[spec.name] = NodeTrack(
                spec, health, event_history, self._arena, self._ports
            )
        self._order: list[NodeTrack] = list(self._nodes.values())
        self._view: tuple[NodeSnapshot, ...] | None = None
        self._new_events: list[EventRecord] = []
        # The scheduler jobs on each GPU (the agents' ``jobs`` messages); the runtime may
        # replace it with one that describes jobs from the scheduler (fleet/jobs.py).
        self.jobs = LiveJobs()
        self._ended_jobs: list[JobInterval] = []
        self._jobs_view: tuple[JobInterval, ...] = ()
        # Nodes the last snapshot judged again (fleet.state.assemble.refresh) and nodes it
        # only restamped with new times and rows (fleet.state.restamp): what a tick cost.
        self.judged = 0
        self.restamped = 0
        # Connections that were up and ended (a node went from streaming or stale to
        # anything else), since the start: see gpufleet.runtime.HeapFreezer.
        self.connections_ended = 0

    @property
    def node_names(self) -> tuple[str, ...]:
        """The nodes in snapshot order."""
        return tuple(self._nodes)

    def ingest(self, update: NodeUpdate) -> None:
        """Take one update from the transport (called about 1,000 times a second)."""
        node = self._nodes.get(update.node)
        if node is None:
            node = self._adopt(update.node)
        if not isinstance(update, NodeMessage):
            if node.status in CONNECTED_STATUSES and update.status not in CONNECTED_STATUSES:
                self.connections_ended += 1
            attempt = node.on_status(update)
            if attempt is not None:
                self._new_events.append(attempt)
            return
        message, received = update.message, update.received
        if isinstance(message, Sample):
            node.on_sample(message, received)
        elif isinstance(message, Event):
            self._new_events.append(node.on_event(message, received))
        elif isinstance(message, Hello):
            node.on_hello(message, received)
        elif isinstance(message, Error):
            self._new_events.append(node.on_error(message, received))
        elif isinstance(message, Bye):
            self._new_events.append(node.on_bye(message, received))
        elif isinstance(message, Jobs):
            self._ended_jobs.extend(self.jobs.ingest(update.node, message, received))

    def _adopt(self, name: str) -> NodeTrack:
        # A node the transport knows but the config did not list: watch it with defaults.
        node = self._track(NodeSpec(name))
        self._nodes[name] = node
        self._order.append(node)
        self._view = None
        return node

    def _track(self, spec: NodeSpec) -> NodeTrack:
        return NodeTrack(spec, self._health, self._event_history, self._arena, self._ports)

    def controller_stalled(self, ended: float) -> None:
        """The controller observed nothing until ``ended``: silence before it does not count.

        Called by the state's own tick watchdog; a caller that learns of a stall another
        way (a test, a replay) may call it too.
        """
        for node in self._order:
            node.controller_stalled(ended)

    def snapshot(self, now: float) -> FleetSnapshot:
        """The fleet at ``now`` (controller clock), with what happened since the last call."""
        if self._watchdog is not None and self._watchdog.beat(now) is not None:
            self.controller_stalled(now)
        transitions: list[NodeTransition] = []
        changed = self._view is None
        self._ports.flush()
        tick = self._ports.freeze()
        judged = restamps = 0
        for node in self._order:
            if node.dirty or now >= node.until or node.snap is None:
                changed = True
                snap = restamped(node, now, tick)
                if snap is not None:
                    node.snap = snap
                    restamps += 1
                    continue
                judged += 1
                transition = refresh(node, now, tick)
                if transition is not None:
                    transitions.append(transition)
        self.judged, self.restamped = judged, restamps
        changed = self._take_jobs() or changed
        if changed or self._view is None:
            self._view = tuple(node.snap for node in self._order if node.snap is not None)
        events, self._new_events = tuple(self._new_events), []
        ended, self._ended_jobs = tuple(self._ended_jobs), []
        return FleetSnapshot(
            taken_at=now,
            nodes=self._view,
            # Rolling averages come from history (fleet/history); the state knows only now.
            utilization=UtilizationSummary(now=self._arena.utilization_now()),
            transitions=tuple(transitions),
            new_events=events,
            jobs=self._jobs_view,
            ended_jobs=ended,
            columns=self._arena.freeze(),
        )

    def _take_jobs(self) -> bool:
        """Put the jobs of nodes whose jobs changed on their snapshots; True if any did."""
        changed = self.jobs.take_changed()
        if not changed:
            return False
        self._jobs_view = tuple(self.jobs.current())
        for name in changed:
            node = self._nodes.get(name)
            if node is None:
                continue
            node.jobs = self.jobs.node_jobs(name)
            if node.snap is not None:
                node.snap = evolve(node.snap, jobs=node.jobs)
        return True
