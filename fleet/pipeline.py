"""The tick pipeline: the stages that turn ingested messages into the published snapshot.

Between ticks the transport hands every message to :meth:`FleetState.ingest`, which
keeps rows and columns and builds no objects. Once per tick :meth:`TickPipeline.run`
finishes a snapshot through these stages, in this order:

1. :meth:`~TickPipeline.judge`: the state freezes the tick. Nodes that received data
   or whose deadlines passed are judged again (``fleet.state.assemble``) or only
   restamped (``fleet.state.restamp``); every other node is last tick's object.
2. :meth:`~TickPipeline.drift`: nodes whose links or GPUs differ from what was learnt
   are broken by drift; GPU swaps and repeat offenders become events.
3. :meth:`~TickPipeline.link_events`: link changes since the last tick become events,
   in ``new_events`` and in each node's recent events.
4. :meth:`~TickPipeline.probe_verdicts`: each probed GPU carries its latest verdict.
5. :meth:`~TickPipeline.record`: history records this snapshot (its repeated XIDs
   thinned to a burst's first and a count; nothing else differs).
6. :meth:`~TickPipeline.figures`: utilization averages and the month's SLA, read back
   from history, are attached. The nodes are the ones history recorded.

The result is what the runtime publishes to the operator desk and every listener.
Stages 4 to 6 belong to rooms above the domain (probing, history, the ledger), so
the runtime hands them in as functions; the order lives here.

Each stage keeps the identity contract of :mod:`fleet.model`: a node (or the tuple
of nodes) it does not change is handed on as the same object.
"""

from __future__ import annotations

from collections.abc import Callable

from fleet.drift import DriftTracker
from fleet.link_events import LinkEventDiffer
from fleet.model import FleetSnapshot
from fleet.state import FleetState

Stage = Callable[[FleetSnapshot], FleetSnapshot]


class TickPipeline:
    """The six stages of one tick, run in order by :meth:`run` (see the module docstring)."""

    __slots__ = ("_decorate", "_drift", "_figures", "_links", "_record", "_state")

    def __init__(
        self,
        state: FleetState,
        drift: DriftTracker,
        links: LinkEventDiffer,
        *,
        probe_verdicts: Stage,
        record: Callable[[FleetSnapshot], None],
        figures: Stage,
    ) -> None:
        self._state, self._drift, self._links = state, drift, links
        self._decorate, self._record, self._figures = probe_verdicts, record, figures

    def run(self, now: float) -> FleetSnapshot:
        """The snapshot to publish for ``now`` (controller clock)."""
        snapshot = self.judge(now)
        snapshot = self.drift(snapshot)
        snapshot = self.link_events(snapshot)
        snapshot = self.probe_verdicts(snapshot)
        self.record(snapshot)
        return self.figures(snapshot)

    def judge(self, now: float) -> FleetSnapshot:
        """Stage 1: the state's snapshot of what was ingested since the last tick."""
        return self._state.snapshot(now)

    def drift(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        """Stage 2: drift from the learnt links and GPUs, as node state and events."""
        return self._drift.apply(snapshot)

    def link_events(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        """Stage 3: link changes since the last tick, as events."""
        return self._links.apply(snapshot)

    def probe_verdicts(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        """Stage 4: each probed GPU's latest probe verdict."""
        return self._decorate(snapshot)

    def record(self, snapshot: FleetSnapshot) -> None:
        """Stage 5: history records the snapshot (it publishes unchanged)."""
        self._record(snapshot)

    def figures(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        """Stage 6: utilization and SLA figures from history."""
        return self._figures(snapshot)
