"""One node as the fleet state tracks it: its session, GPUs, ports and recent events."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from collectors.protocol import Bye, Error, Event, Hello, PortInfo, Sample, Value
from collectors.updates import NodeStatus, NodeStatusChange
from fleet.health import GpuVerdictView, NodeJudgement
from fleet.jobs import JobInterval
from fleet.model import EventRecord, GpuBrief, NodeSnapshot, NodeState
from fleet.settings.health_section import HealthSection
from fleet.state.build import Steady
from fleet.state.columns import FastPlan, GpuArena
from fleet.state.gpu import GpuTrack
from fleet.state.gpu_ingest import take_gpus
from fleet.state.hw_counters import kept_counters
from fleet.state.layout import Layout, Row, session_layout
from fleet.state.nvlink import NodeLinks
from fleet.state.port import PortsChanged, PortTrack
from fleet.state.port_batch import RowPlan
from fleet.state.port_columns import PortColumns
from fleet.state.rows import PortRows
from fleet.xid import xid_text

_NO_SLOTS = np.zeros(0, dtype=np.intp)


def _slots(tracks: list[PortTrack]) -> np.ndarray:
    return np.array([track.slot for track in tracks], dtype=np.intp)


def _uniform(tracks: list[PortTrack]) -> RowPlan | None:
    plans = {id(track.plan): track.plan for track in tracks}
    return next(iter(plans.values())) if len(plans) == 1 else None


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node the fleet expects: its name and how many GPUs it should have."""

    name: str
    expected_gpus: int = 8


class NodeTrack:
    """Everything the state knows about one node between snapshots."""

    # Slots, not a dict per node: ~70 attributes, ~1 KiB a node less.
    __slots__ = (
        "arena",
        "by_uuid",
        "cfg",
        "clocks",
        "counted",
        "dirty",
        "earliest",
        "events",
        "events_view",
        "facts_moved",
        "fast_plan",
        "fast_rows",
        "fast_settled",
        "garbage",
        "gpu_briefs",
        "gpu_slots",
        "gpu_start",
        "gpus",
        "had_errors",
        "hello",
        "hw_moved",
        "interval",
        "jobs",
        "judged_ports",
        "judged_views",
        "judged_with",
        "last_sample_at",
        "last_seen",
        "latest_rows",
        "layout",
        "links",
        "max_rate",
        "nics",
        "node_judged",
        "nvml_error",
        "pending",
        "port_by_name",
        "port_columns",
        "port_plans",
        "port_rows",
        "port_slots",
        "ports",
        "ports_changed",
        "ports_until",
        "quiet_slow_rows",
        "sampled_at",
        "slow_counts",
        "slow_facts",
        "slow_quiet_at",
        "snap",
        "spec",
        "staged_before",
        "state",
        "state_reasons",
        "state_since",
        "status",
        "status_reason",
        "steady",
        "steady_stale",
        "until",
        "verdict_views",
        "watched_since",
    )

    def __init__(
        self,
        spec: NodeSpec,
        cfg: HealthSection,
        event_history: int,
        arena: GpuArena,
        port_columns: PortColumns,
    ) -> None:
        self.spec = spec
        self.cfg = cfg
        self.arena = arena
        self.port_columns = port_columns
        self.gpu_start = 0  # the node's slots in the fleet's GPU columns
        self.gpu_slots = 0
        self.fast_plan: FastPlan | None = None
        # The latest fast row of each GPU (None: lost or absent), as the decoder made it.
        self.fast_rows: Sequence[Row | None] = ()
        # Every GPU sampled and answering: a fast row can only move its clock reasons
        # (see fleet.state.gpu_ingest).
        self.fast_settled = False
        self.had_errors = False  # a GPU may hold field errors from the last sample
        self.clocks: list[Value] | None = None  # settled: each GPU's clock reasons now
        self.links = NodeLinks(())  # per-link NVLink CRC baselines of this session
        # This session's last slow tick (fleet.state.slow_ingest): the fields the rules
        # read and the NVLink counts of each GPU (None: not every GPU sent a whole row),
        # and its time when every NVLink counter moved by 0 at a known rate of 0.
        self.slow_facts: tuple[tuple[Value, ...], ...] | None = None
        self.slow_counts: tuple[tuple[Value, ...], ...] | None = None
        self.slow_quiet_at: float | None = None
        self.quiet_slow_rows: Sequence[Row] | None = None  # the last slow rows, when quiet
        # The latest sample's port (NIC) rows while they cover every port (NIC), as the
        # decoder made them; None: each PortTrack.row holds its own.
        self.latest_rows: list[Sequence[Row] | None] = [None, None]
        self.status: NodeStatus = "connecting"  # the transport's last word (a fact)
        self.status_reason = ""
        # When the controller's last stall ended: silence before it was not observed, so
        # the liveness rule does not count it (fleet.health.liveness).
        self.watched_since = -math.inf
        self.last_seen: float | None = None
        self.last_sample_at: float | None = None
        self.sampled_at: float | None = None  # the node's time on its latest sample
        self.interval = 1.0
        self.hello: Hello | None = None
        self.pending: tuple[Hello, float] | None = None  # a hello awaiting its first sample
        self.layout: Layout | None = None
        self.gpus: list[GpuTrack] = []
        self.by_uuid: dict[str, GpuTrack] = {}
        self.ports: list[PortTrack] = []
        self.nics: list[PortTrack] = []
        self.port_by_name: dict[str, PortTrack] = {}
        self.max_rate: dict[str, float] = {}
        self.events: deque[EventRecord] = deque(maxlen=event_history)
        self.events_view: tuple[EventRecord, ...] = ()
        self.garbage = 0  # samples that did not fit the session's hello
        # Snapshot bookkeeping (see fleet.state.assemble).
        self.dirty = True
        # Something beyond the node's times and readings may have moved since the last
        # refresh (status, session, events, a GPU's facts or errors, slow rows): judge
        # it again. False: the last judgement holds, only times and rows move
        # (fleet.state.restamp).
        self.facts_moved = True
        self.until = math.inf
        self.snap: NodeSnapshot | None = None
        self.jobs: tuple[JobInterval, ...] = ()  # the scheduler jobs on its GPUs now
        self.state: NodeState | None = None
        self.state_reasons: tuple[str, ...] = ()
        self.state_since: float | None = None
        # The node rule's last judgement and the inputs it had (see assemble._node_state).
        self.node_judged: NodeJudgement | None = None
        # The NVML error the agent sent without naming a GPU (no library, no driver).
        self.nvml_error: str | None = None
        self.judged_with: tuple[str, str] | None = None
        self.judged_views: tuple[GpuVerdictView, ...] | None = None
        self.judged_ports: list[PortTrack] | None = None
        # A sample brought hardware counters since the last refresh or restamp.
        self.hw_moved = False
        self.counted: bool | None = None  # do this node's GPUs count toward utilization?
        # What the last snapshot held, reused while nothing in it changed.
        self.gpu_briefs: tuple[GpuBrief, ...] = ()
        self.verdict_views: tuple[GpuVerdictView, ...] = ()
        self.steady: Steady = ()
        # A slow row or a new session may have dropped a GPU's steady readings since
        # ``steady`` was taken (GpuTrack.slow_values); else it holds.
        self.steady_stale = True
        # Per track list (ports, NICs) of this session: the rows of the last snapshot.
        self.port_rows: dict[int, PortRows] = {}
        self.earliest: float | None = None  # the earliest hold of a GPU or port
        self.ports_changed = PortsChanged()
        self.ports_until = math.inf  # the earliest hold of a port or NIC
        # The field plan all ports (NICs) share, so a flush takes their rows at once.
        self.port_plans: tuple[RowPlan | None, RowPlan | None] = (None, None)
        # The ports' (NICs') slots in the fleet's port columns, in order.
        self.port_slots: tuple[np.ndarray, np.ndarray] = (_NO_SLOTS, _NO_SLOTS)
        # PortColumns.flushes when this node last staged rows (they wait for the next).
        self.staged_before = -1

    def controller_stalled(self, ended: float) -> None:
        """The controller did not observe anything until ``ended``: judge the node afresh."""
        self.watched_since = ended
        self.dirty = self.facts_moved = True

    def on_status(self, change: NodeStatusChange) -> EventRecord | None:
        """The transport says how the connection is; a failed attempt is also an event.

        Each failed connection attempt becomes a ``connect_failed`` event (time and
        error), the evidence an SLA claim lists; it is not a sign of life, so
        ``last_seen`` stays where it was.
        """
        self.status = change.status
        self.status_reason = change.reason
        self.dirty = self.facts_moved = True
        if not change.attempt_failed:
            return None
        record = EventRecord(change.at, self.spec.name, "connect_failed", detail=change.reason)
        self.events.append(record)
        return record

    def on_hello(self, hello: Hello, received: float) -> None:
        """A new agent session. It takes effect with its first sample or event, so a
        snapshot between ``hello`` and that sample still shows the previous session
        (no GPU reads "unknown" for an instant after a reconnect)."""
        self.pending = (hello, received)
        self.last_seen = received
        if hello.nvml is not None:  # without NVML the agent's error follows the hello
            self._nvml_failed(None)
        self.facts_moved = True  # the session takes effect with the next message
        if self.status == "connecting":
            self.status = "streaming"
            self.dirty = True

    def _activate(self) -> None:
        if self.pending is None:
            return
        hello, received = self.pending
        self.pending = None
        self.layout, self.hello = layout, hello = session_layout(hello)
        self.interval = hello.interval if hello.interval > 0 else 1.0
        for kept, row in zip(self.gpus, self.fast_rows, strict=False):
            kept.fast = row  # the next session's columns start from it
        self.links.hand_back(self.gpus)
        gpus = []
        for info in hello.gpus:
            track = self.by_uuid.get(info.uuid)
            if track is None:  # a new identity starts clean; an old UUID's history stays behind
                track = GpuTrack(info)
            else:
                track.new_session(info, received)
            gpus.append(track)
        self.gpus = gpus
        self.links = NodeLinks(gpus)
        self.slow_facts = self.slow_counts = self.slow_quiet_at = self.quiet_slow_rows = None
        self.fast_settled = False
        self.had_errors = True  # tracks kept from the last session may hold errors
        self.by_uuid = {track.info.uuid: track for track in gpus}
        self._place_gpus(len(gpus), layout)
        self._hand_rows_to_tracks(0, self.ports)
        self._hand_rows_to_tracks(1, self.nics)
        if self.staged_before == self.port_columns.flushes:
            # The last session's rows are read with its layout. Only this node's rows
            # need it: not a flush per port of every node at a fleet start, each taking
            # the rows the other nodes had staged since.
            self.port_columns.flush()
        self.ports = [self._port(info, layout, self.max_rate) for info in hello.ports]
        self.nics = [self._port(info, layout, None) for info in hello.nics]
        self.port_rows = {}
        self.ports_changed.since_refresh = True
        self.port_plans = (_uniform(self.ports), _uniform(self.nics))
        self.port_slots = (_slots(self.ports), _slots(self.nics))
        self.earliest = None
        self.steady_stale = True
        self.dirty = self.facts_moved = True

    def _place_gpus(self, count: int, layout: Layout) -> None:
        arena = self.arena
        if count > self.gpu_slots:
            self.gpu_start, self.gpu_slots = arena.allocate(count), count
        arena.clear(self.gpu_start, self.gpu_slots)
        self.fast_plan = plan = FastPlan(layout.gpu)
        # Until its first sample a GPU shows its last readings (a swapped-in one: none).
        self.fast_rows = tuple(track.fast for track in self.gpus)
        arena.write(self.gpu_start, count, self.fast_rows, plan)
        self.counted = None  # the counted range changed with the GPU count
        self.gpu_briefs = ()

    def _port(self, info: PortInfo, layout: Layout, best: dict[str, float] | None) -> PortTrack:
        index = layout.nic if info.kind == "eth" else layout.port
        track = self.port_by_name.get(info.name)
        if track is None or track.info.kind != info.kind:
            track = PortTrack.of(info, index, self.port_columns, best, self.ports_changed)
            self.port_by_name[info.name] = track
        else:
            track.node_max = best
            track.relayout(info, index, self.port_columns)
        return track

    def expected_rate(self, kind: str) -> float | None:
        """The rate a port of ``kind`` should run at: configured, else the node's best."""
        return self.cfg.expected_port_rate_gbps or self.max_rate.get(kind)

    def on_sample(self, sample: Sample, received: float) -> None:
        """One tick: keep the rows, advance counters. No snapshot objects are built here."""
        if self.pending is not None:
            self._activate()
        layout = self.layout
        if layout is None:
            self.garbage += 1  # a sample before hello is not protocol; the transport judges
            return
        self.last_seen = self.last_sample_at = received
        self.sampled_at = sample.t
        if self.status == "connecting":
            self.status = "streaming"
            self.facts_moved = True
        if not take_gpus(self, sample, layout, received):
            self.facts_moved = True
        # Counters advance for the whole fleet at once, before the next snapshot.
        columns = self.port_columns
        plans, slots = self.port_plans, self.port_slots
        self.staged_before = columns.flushes
        columns.stage(self.ports, sample.ports, sample.t, received, plans[0], slots[0])
        columns.stage(self.nics, sample.nics, sample.t, received, plans[1], slots[1])
        self._keep_rows(0, self.ports, sample.ports)
        self._keep_rows(1, self.nics, sample.nics)
        if sample.hw is not None:
            # Readings only: no rule reads a port's hw counters (fleet.health.port reads
            # its sysfs counters' rates, which the flush moves), so a slow tick with
            # nothing else moved keeps the last judgement and shows the new counters.
            self.hw_moved = True
            for track, counters in zip(self.ports, sample.hw, strict=False):
                track.hw = kept_counters(counters)
        if len(sample.gpus) != len(self.gpus) or len(sample.ports) != len(self.ports):
            self.garbage += 1
            self.facts_moved = True
        self.dirty = True

    def _keep_rows(self, which: int, tracks: list[PortTrack], rows: Sequence[Row]) -> None:
        if len(rows) == len(tracks):  # the usual case: no per-port work
            self.latest_rows[which] = rows
            return
        self._hand_rows_to_tracks(which, tracks)
        for track, row in zip(tracks, rows, strict=False):
            track.row = tuple(row)  # a port without a row keeps its last one

    def _hand_rows_to_tracks(self, which: int, tracks: list[PortTrack]) -> None:
        kept = self.latest_rows[which]
        if kept is not None:
            for track, row in zip(tracks, kept, strict=True):
                track.row = row
            self.latest_rows[which] = None

    def port_rows_now(self, which: int, tracks: list[PortTrack]) -> Sequence[Row | None]:
        """The rows the ports (0) or NICs (1) show now (the sample's list: never written)."""
        kept = self.latest_rows[which]
        return tuple(track.row for track in tracks) if kept is None else kept

    def gpu_at(self, index: object) -> GpuTrack | None:
        """The GPU at a position the agent named (None: not a GPU of this session)."""
        try:
            i = int(index)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return None
        return self.gpus[i] if 0 <= i < len(self.gpus) else None

    def on_event(self, event: Event, received: float) -> EventRecord:
        """An agent event: XIDs mark their GPU identity; every event is recorded."""
        self._activate()
        # The UUID names the board; the index only when no UUID came (an unknown UUID
        # is a board this session does not have, never the one now at that index).
        if event.uuid:
            track = self.by_uuid.get(event.uuid)
        else:
            track = None if event.gpu is None else self.gpu_at(event.gpu)
        detail = event.detail
        if event.kind == "xid" and event.code is not None:
            detail = xid_text(event.code) + (f" ({detail})" if detail else "")
            if track is not None:
                track.mark_xid(event.code, received)
        elif event.kind == "gpu_lost" and track is not None:
            self.fast_settled = False
            # The sample's lost flag words it the same way (GpuTrack.apply_fast): which
            # of the two comes first, or whether a tick falls between them, shows nowhere.
            track.mark_lost(f"GPU lost ({detail})" if detail else "GPU lost")
        uuid = event.uuid or (track.info.uuid if track is not None else None)
        record = EventRecord(
            event.t, self.spec.name, event.kind, event.gpu, uuid, event.code, detail
        )
        return self._record(record, received)

    def on_error(self, error: Error, received: float) -> EventRecord:
        """A problem the agent reported (it keeps running unless ``fatal``)."""
        detail = f"{error.code}: {error.message}" if error.message else error.code
        kind = "agent_fatal" if error.fatal else "agent_error"
        if error.gpu is None and not error.fatal and error.code.startswith("NVMLError"):
            self._nvml_failed(error.code)
        return self._record(
            EventRecord(error.t, self.spec.name, kind, gpu=error.gpu, detail=detail), received
        )

    def _nvml_failed(self, code: str | None) -> None:
        """The agent could not open NVML (``code``), or can again (None): the node rule
        names it first on a node short of GPUs, so its last judgement no longer holds."""
        if code != self.nvml_error:
            self.nvml_error = code
            self.node_judged = None

    def on_bye(self, bye: Bye, received: float) -> EventRecord:
        """The agent is exiting on purpose."""
        return self._record(EventRecord(bye.t, self.spec.name, "bye", detail=bye.reason), received)

    def _record(self, record: EventRecord, received: float) -> EventRecord:
        self.events.append(record)
        self.last_seen = received
        self.dirty = self.facts_moved = True
        return record
