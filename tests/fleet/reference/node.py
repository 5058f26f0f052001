"""One node as the fleet state tracks it: its session, GPUs, ports and recent events."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from bench.lib.reference_gpu import GpuTrack
from collectors.protocol import Bye, Error, Event, Hello, PortInfo, Sample
from collectors.updates import NodeStatus, NodeStatusChange
from fleet.model import EventRecord, NodeSnapshot, NodeState
from fleet.settings.health_section import HealthSection
from fleet.state.layout import Layout, Row
from fleet.xid import xid_text
from tests.fleet.reference.port import PortTrack


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node the fleet expects: its name and how many GPUs it should have."""

    name: str
    expected_gpus: int = 8


class NodeTrack:
    """Everything the state knows about one node between snapshots."""

    def __init__(self, spec: NodeSpec, cfg: HealthSection, event_history: int) -> None:
        self.spec = spec
        self.cfg = cfg
        self.status: NodeStatus = "connecting"
        self.status_reason = ""
        self.last_seen: float | None = None
        self.last_sample_at: float | None = None
        self.sampled_at: float | None = None  # the node's time on its latest sample
        self.interval = 1.0
        self.hello: Hello | None = None
        self.pending: tuple[Hello, float] | None = None  # a hello awaiting its first sample
        self.nvml_error: str | None = None  # the agent's NVML error naming no GPU
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
        self.until = math.inf
        self.snap: NodeSnapshot | None = None
        self.state: NodeState | None = None
        self.state_reasons: tuple[str, ...] = ()
        self.state_since: float | None = None
        self.util_sum = 0.0
        self.util_count = 0

    def on_status(self, change: NodeStatusChange) -> EventRecord | None:
        """The transport says how the connection is; a failed attempt is also an event.

        Each failed connection attempt becomes a ``connect_failed`` event (time and
        error), the evidence an SLA claim lists; it is not a sign of life, so
        ``last_seen`` stays where it was.
        """
        self.status = change.status
        self.status_reason = change.reason
        self.dirty = True
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
        if hello.nvml is not None:
            self.nvml_error = None
        if self.status in ("connecting", "stale"):
            self.status = "streaming"
            self.dirty = True

    def _activate(self) -> None:
        if self.pending is None:
            return
        hello, received = self.pending
        self.pending = None
        self.hello = hello
        self.layout = layout = Layout.from_hello(hello)
        self.interval = hello.interval if hello.interval > 0 else 1.0
        gpus = []
        for info in hello.gpus:
            track = self.by_uuid.get(info.uuid)
            if track is None:  # a new identity starts clean; an old UUID's history stays behind
                track = GpuTrack(info)
            else:
                track.new_session(info, received)
            gpus.append(track)
        self.gpus = gpus
        self.by_uuid = {track.info.uuid: track for track in gpus}
        self.ports = [self._port(info, layout) for info in hello.ports]
        self.nics = [self._port(info, layout) for info in hello.nics]
        self.dirty = True

    def _port(self, info: PortInfo, layout: Layout) -> PortTrack:
        index = layout.nic if info.kind == "eth" else layout.port
        track = self.port_by_name.get(info.name)
        if track is None or track.info.kind != info.kind:
            track = PortTrack(info, index, self.cfg)
            self.port_by_name[info.name] = track
        else:
            track.info = info
            track.relayout(index, self.cfg)
        return track

    def expected_rate(self, kind: str) -> float | None:
        """The rate a port of ``kind`` should run at: configured, else the node's best."""
        return self.cfg.expected_port_rate_gbps or self.max_rate.get(kind)

    def on_sample(self, sample: Sample, received: float) -> None:
        """One tick: keep the rows, advance counters. No snapshot objects are built here."""
        self._activate()
        layout = self.layout
        if layout is None:
            self.garbage += 1  # a sample before hello is not protocol; the transport judges
            return
        self.last_seen = self.last_sample_at = received
        self.sampled_at = sample.t
        if self.status in ("connecting", "stale"):
            self.status = "streaming"
        self._apply_gpus(sample, layout, received)
        t = sample.t
        for track, row in zip(self.ports, sample.ports, strict=False):
            track.apply(row, t, received, self.cfg)
            facts = track.facts
            rate, kind = facts.rate_gbps, facts.kind
            if rate is not None and facts.state == "ACTIVE" and rate > self.max_rate.get(kind, 0):
                self.max_rate[kind] = rate  # the best this node's ports of this kind have shown
        for track, row in zip(self.nics, sample.nics, strict=False):
            track.apply(row, t, received, self.cfg)
        if sample.hw is not None:
            for track, counters in zip(self.ports, sample.hw, strict=False):
                track.hw = counters
        if len(sample.gpus) != len(self.gpus) or len(sample.ports) != len(self.ports):
            self.garbage += 1
        self.dirty = True

    def _apply_gpus(self, sample: Sample, layout: Layout, received: float) -> None:
        rows, lost, clock = sample.gpus, sample.lost, layout.gpu["clock_reasons"]
        n_rows, width = len(rows), len(layout.gpu)
        for i, track in enumerate(self.gpus):
            row: Row | None = rows[i] if i < n_rows else None
            if row is not None and len(row) < width:
                row = layout.gpu.pad(row)
            track.apply_fast(row, row is None or i in lost, clock, received)
        for key, fields in sample.errs.items():
            track_at = self._gpu_at(key)
            if track_at is not None:
                track_at.errors = tuple(sorted(fields.items()))
        if sample.slow is not None:
            for track, srow in zip(self.gpus, sample.slow, strict=False):
                track.apply_slow(srow, sample.t, received, layout.slow)
        if sample.links is not None:
            for track, links in zip(self.gpus, sample.links, strict=False):
                track.apply_links(links, sample.t)

    def _gpu_at(self, index: object) -> GpuTrack | None:
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
            track = None if event.gpu is None else self._gpu_at(event.gpu)
        detail = event.detail
        if event.kind == "xid" and event.code is not None:
            detail = xid_text(event.code) + (f" ({detail})" if detail else "")
            if track is not None:
                track.mark_xid(event.code, received)
        elif event.kind == "gpu_lost" and track is not None:
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
            self.nvml_error = error.code
        return self._record(
            EventRecord(error.t, self.spec.name, kind, gpu=error.gpu, detail=detail), received
        )

    def on_bye(self, bye: Bye, received: float) -> EventRecord:
        """The agent is exiting on purpose."""
        return self._record(EventRecord(bye.t, self.spec.name, "bye", detail=bye.reason), received)

    def _record(self, record: EventRecord, received: float) -> EventRecord:
        self.events.append(record)
        self.last_seen = received
        self.dirty = True
        return record
