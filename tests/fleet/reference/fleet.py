"""The object-per-tick FleetState the columnar state replaced: a test oracle only.

This package is ``fleet/state`` as of main e0f31f2 (every GpuSnapshot and PortSnapshot
built each tick, one ``Counter`` object per port counter), kept unchanged but for its
imports so that tests/fleet/test_columnar_oracle.py can check that the columnar state
hands out the same snapshots. Nothing outside that test imports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from collectors.protocol import Bye, Error, Event, Hello, Sample
from collectors.updates import NodeMessage, NodeUpdate
from fleet.model import (
    EventRecord,
    FleetSnapshot,
    NodeSnapshot,
    NodeTransition,
    UtilizationSummary,
)
from fleet.settings.health_section import HealthSection
from tests.fleet.reference.assemble import refresh
from tests.fleet.reference.node import NodeSpec, NodeTrack


class FleetState:
    """The live fleet: cheap ``ingest`` per update, ``snapshot`` once per tick.

    ``ingest`` keeps the latest decoded arrays and advances counters; it builds no
    snapshot objects. ``snapshot`` rebuilds only nodes that received data or whose
    holds or staleness deadlines passed, and reuses every other NodeSnapshot object.
    Not thread-safe: call both from the event loop.
    """

    def __init__(
        self, nodes: Sequence[NodeSpec], health: HealthSection, *, event_history: int = 200
    ) -> None:
        self._health = health
        self._event_history = event_history
        self._nodes: dict[str, NodeTrack] = {}
        for spec in nodes:
            self._nodes[spec.name] = NodeTrack(spec, health, event_history)
        self._order: list[NodeTrack] = list(self._nodes.values())
        self._view: tuple[NodeSnapshot, ...] | None = None
        self._new_events: list[EventRecord] = []

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

    def _adopt(self, name: str) -> NodeTrack:
        # A node the transport knows but the config did not list: watch it with defaults.
        node = NodeTrack(NodeSpec(name), self._health, self._event_history)
        self._nodes[name] = node
        self._order.append(node)
        self._view = None
        return node

    def snapshot(self, now: float) -> FleetSnapshot:
        """The fleet at ``now`` (controller clock), with what happened since the last call."""
        transitions: list[NodeTransition] = []
        changed = self._view is None
        for node in self._order:
            if node.dirty or now >= node.until or node.snap is None:
                transition = refresh(node, now)
                changed = True
                if transition is not None:
                    transitions.append(transition)
        if changed or self._view is None:
            self._view = tuple(node.snap for node in self._order if node.snap is not None)
        events, self._new_events = tuple(self._new_events), []
        return FleetSnapshot(
            taken_at=now,
            nodes=self._view,
            utilization=self._utilization(),
            transitions=tuple(transitions),
            new_events=events,
        )

    def _utilization(self) -> UtilizationSummary:
        total = sum(node.util_sum for node in self._order)
        count = sum(node.util_count for node in self._order)
        # Rolling averages come from history (fleet/history); the state knows only now.
        return UtilizationSummary(now=total / count if count else None)
