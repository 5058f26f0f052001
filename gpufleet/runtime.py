"""The running fleet: SSH streams in, FleetState judges, history records, listeners read.

``FleetRuntime`` is what ``gpufleet watch``, ``demo`` and ``serve`` run. It owns the
tick: once per interval it runs the stages of :class:`fleet.pipeline.TickPipeline`
(judge, drift, link events, probe verdicts, record into history, utilization and
SLA figures) and passes the result to the operator desk and every listener (the
dashboard, the Prometheus endpoint). It implements :class:`fleet.facade.FleetFacade`.

The tick runs on the event loop, and the watchdog calls a late tick a stall of the
monitor: slow work never runs in it. The SLA summary is computed on a thread from a
copy of the recorder's books, and history's writes wait on the recorder's own thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from collectors.process_list import ProcessListing
from collectors.ssh import SshFleet
from collectors.ssh.options import SshOptions
from collectors.ssh.processes import request_processes
from collectors.ssh.target import NodeTarget
from collectors.tasks import cancel_all
from fleet.desk import OperatorDesk
from fleet.drift import STORE_NAME, DriftTracker
from fleet.facade import (
    BrokenInterval,
    ExportRequest,
    GpuSeries,
    NotAvailable,
    ProbeListener,
    ProbeReport,
    ReadOnlyFleet,
    RepairLine,
    SnapshotListener,
    Suite,
    UnknownNode,
    UtilizationPoint,
)
from fleet.link_events import LinkEventDiffer
from fleet.model import FleetSnapshot, SlaSummary
from fleet.native_heap import configure_malloc, release_free_heap
from fleet.pipeline import TickPipeline
from fleet.settings.contract_section import ContractSection
from fleet.ssh_login import ssh_login_argv
from fleet.state import FleetState, NodeSpec
from fleet.watchdog import TickWatchdog
from fleet.xid import XidRepeatFilter
from gpufleet.campaign_view import CampaignView
from gpufleet.config import Config
from gpufleet.delivery_view import DeliveryView
from gpufleet.ledger_figures import LedgerFigures, LedgerResult, compute_figures, iso_minute
from gpufleet.probing import FleetProber
from history import HistoryRecorder
from history.desk_log import DeskHistory
from history.ledger import LedgerInputs
from ledger.jobs.scheduler_watch import SchedulerWatch
from ledger.jobs.slurm_meta import Runner
from ledger.sla.section import SlaSection

log = logging.getLogger(__name__)

# The SLA summary reads month-to-date history from disk: refreshing it every tick is waste.
SLA_REFRESH_S = 30.0
# Month-to-date SLA figures from what the ledger reads (see ledger.sla.sla_summary).
SlaSummarizer = Callable[[LedgerInputs | Path, SlaSection, float], SlaSummary]


def _ledger_sla_summary(
    source: LedgerInputs | Path, contract: SlaSection, now: float
) -> SlaSummary:
    from ledger.sla import sla_summary  # the ledger's import cost only where a contract is

    return sla_summary(source, contract, now)


# Most objects the young collections see are the decoded rows of the messages just read
# (tuples of numbers, untracked at their first collection). Collecting them 200 at a time
# instead of CPython's 700 finds them still in the cache: at 1,000 nodes `serve` spent
# 5.2-5.8 % of its CPU in the collector against 6.7-7.7 % in every one of seven
# alternated pairs, and less CPU in all in six of them (bench/bench_fleet.py --no-floor
# against the same with --young 700; bench/results/fleet.md). Larger thresholds cost
# more (2,000: 7.9 %; 5,000: 7.9 %), and a 20,000 one let each collection
# scan what a whole message burst left alive (30-100 ms). The generation-2 trigger is
# pushed out of reach: a full collection scans every live sample of the tick (hundreds of
# ms) and the HeapFreezer runs it on a schedule instead (gc.freeze skips the long-lived
# heap in it).
GC_YOUNG_THRESHOLD = 200
GC_FULL_TRIGGER_OFF = 1_000_000


def gc_thresholds(current: tuple[int, int, int]) -> tuple[int, int, int]:
    """The collector thresholds the runtime runs under (from CPython's ``current``)."""
    _, middle, _ = current
    return GC_YOUNG_THRESHOLD, middle, GC_FULL_TRIGGER_OFF


# Ticks with an unchanged number of streaming nodes before the fleet counts as settled.
SETTLED_TICKS = 5
# While the fleet connects, the heap is frozen in steps: each time this share of the
# nodes has begun streaming since the last step. One freeze at the settle collected every
# connection at once: 226.5 ms at 1,000 nodes (bench/bench_fleet.py --timeline,
# gc_largest_whole_run), the largest pause of a run. In steps each collection scans what
# the nodes of one step built (sixteen steps at most, then the settle's).
FREEZE_STEP_SHARE = 1 / 16
# The runtime turns CPython's own trigger for a full collection off (GC_FULL_TRIGGER_OFF),
# so cyclic garbage would pile up: a full collection runs on this schedule instead, before
# the fleet settles too (a fleet that keeps connecting may never settle, and its handshakes
# and retries are what leave cycles). Once frozen it scans only what is not frozen (the
# live samples and snapshot of one tick); at 1,000 nodes that is still the largest pause
# (bench/bench_fleet_tick.py prints it). Before the freeze it scans the connections too.
FULL_COLLECT_S = 30.0
# A thawed full collection scans the whole heap, as the settle freeze did (218-277 ms
# at 1,000 nodes in bench/bench_fleet.py's gc_max_ms_cpu_whole_run): while connections
# keep ending (a reboot wave) it runs at most this often.
REFREEZE_MIN_S = 300.0
# Seconds a stopping task has to end before it is cancelled again (collectors.tasks).
STOP_GRACE_S = 1.0


def freeze_young_heap() -> None:
    """Collect the young generations only, then freeze everything that is live.

    A step while nodes connect runs this: the old generation holds what the nodes of
    the step built (their connections and tracks, all live), and scanning it was the
    step's pause (47-71 ms at 1,000 nodes when a tick brought a few hundred nodes at
    once). Garbage that reached the old generation is frozen with it; a connecting
    fleet leaves none when every node streams (a thaw after the settle found no
    objects, bench/bench_fleet.py --frozen-garbage), and one that settles with nodes
    not streaming owes a thaw (:class:`HeapFreezer`).
    """
    gc.collect(1)
    gc.freeze()


def freeze_live_heap() -> None:
    """Collect, then freeze what is left, then hand the freed pages back.

    The automatic full collection is off (:data:`GC_FULL_TRIGGER_OFF`), so the cyclic
    garbage of start-up and of a fleet's connecting (handshakes, timeouts, retries) sits
    in the collector's generations until now; frozen with the live heap it would stay
    resident for the life of the process. One full collection here, before anything is
    measured or scraped, frees it once.
    """
    gc.collect()
    gc.freeze()
    release_free_heap()


class HeapFreezer:
    """Freezes the heap while the fleet connects, so full collections skip it.

    Connections, node tracks and caches built while the fleet connects live for the
    whole run; left in the oldest generation, every full collection scans them again
    (hundreds of ms at 1,000 nodes). ``gc.freeze`` moves them out of the collector's
    view; they are still freed by reference counting if they go. What goes as a
    reference cycle is not: an SSH connection that was up at the freeze and ended
    later (a node rebooted, a link dropped) stayed resident for good, up to ~18 KiB
    per node (bench/bench_heap_thaw.py). So once connections up at the first freeze
    have ended, a scheduled collection thaws the heap, collects it whole and freezes it
    again, at most once per :data:`REFREEZE_MIN_S`.

    The heap is frozen in steps while nodes connect (:data:`FREEZE_STEP_SHARE`) and once
    more when the fleet has settled. A step scans only the young generations
    (:func:`freeze_young_heap`) and also freezes the connect attempts in flight: one
    that fails leaves its cycles frozen, so a fleet that settles with nodes not
    streaming, or after an attempt failed since the first step, owes one thaw, as a
    connection that ended does.
    """

    def __init__(self) -> None:
        self.frozen_at: float | None = None  # the settle's freeze, then the latest thaw's
        self.collected_at: float | None = None  # the latest scheduled full collection
        self.refreezes = 0
        self.steps = 0  # freezes while the fleet connected, before it settled
        self._period_from: float | None = None
        self._streaming = -1
        self._steady = 0
        self._streaming_at_step = 0
        self._ended_at_freeze: int | None = None  # the count at the first freeze
        self._thaw_owed = False
        self._attempt_failed = False  # a connect attempt failed after a step froze it

    def observe(
        self, snapshot: FleetSnapshot, every_node_tried: bool, connections_ended: int = 0
    ) -> None:
        """Count steady ticks; freeze in steps while nodes connect and on the first tick
        after the fleet settled; collect what is not frozen every :data:`FULL_COLLECT_S`,
        settled or not, and the frozen heap too once connections have ended since the
        first freeze (``connections_ended``: a running count, see
        ``FleetState.connections_ended``)."""
        t = snapshot.taken_at
        if self.frozen_at is None:
            if self.steps and not self._attempt_failed:
                self._attempt_failed = any(e.kind == "connect_failed" for e in snapshot.new_events)
            if self._settled(snapshot, every_node_tried):
                self._freeze(t, connections_ended)
                self.frozen_at = t
                not_streaming = snapshot.nodes_streaming < len(snapshot.nodes)
                self._thaw_owed = self.steps > 0 and (not_streaming or self._attempt_failed)
                return
            if self._step_due(snapshot):
                self._streaming_at_step = snapshot.nodes_streaming
                self.steps += 1
                self._freeze(t, connections_ended, freeze_young_heap)
                return
        if self._period_from is None:
            self._period_from = t
        elif t - self._period_from >= FULL_COLLECT_S:
            if self._thaw_due(t, connections_ended):
                gc.unfreeze()
                self._ended_at_freeze, self._thaw_owed = None, False
                self._freeze(t, connections_ended)
                self.frozen_at = t
                self.refreezes += 1
            else:
                gc.collect()
                if self.frozen_at is not None:
                    # What lived through a full collection after the settle is the fleet's
                    # (tracks, caches, history): the next one scans only what came since.
                    # Unfrozen, each scanned it again (85-114 ms at 3,000 nodes, 14 ms
                    # with this); one frozen and later dropped as a cycle waits for a thaw.
                    gc.freeze()
                release_free_heap()  # what the collection freed leaves the resident set
            self.collected_at = self._period_from = t

    def _step_due(self, snapshot: FleetSnapshot) -> bool:
        step = max(1, int(len(snapshot.nodes) * FREEZE_STEP_SHARE))
        return snapshot.nodes_streaming - self._streaming_at_step >= step

    def _freeze(
        self, t: float, connections_ended: int, freeze: Callable[[], None] = freeze_live_heap
    ) -> None:
        freeze()  # collects only what the last freeze left out
        self._period_from = t
        if self._ended_at_freeze is None:
            self._ended_at_freeze = connections_ended

    def _thaw_due(self, t: float, connections_ended: int) -> bool:
        return (
            self.frozen_at is not None
            and (self._thaw_owed or connections_ended != self._ended_at_freeze)
            and t - self.frozen_at >= REFREEZE_MIN_S
        )

    def _settled(self, snapshot: FleetSnapshot, every_node_tried: bool) -> bool:
        streaming = snapshot.nodes_streaming
        if streaming != self._streaming:
            self._streaming, self._steady = streaming, 0
            return False
        self._steady += 1
        return every_node_tried and self._steady >= SETTLED_TICKS


class FleetRuntime(DeliveryView):
    """A fleet being watched: connections, state, history and the tick that joins them."""

    def __init__(
        self,
        config: Config,
        targets: Sequence[NodeTarget],
        *,
        data_dir: Path | None,
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
        ssh_options: SshOptions | None = None,
        sla_summary: SlaSummarizer | None = None,
        job_metadata: Runner | None = None,
    ) -> None:
        """``sla_summary``: how the month's SLA figures are computed from what the ledger
        reads (``ledger.sla.sla_summary`` unless given; it runs on a thread).
        ``job_metadata``: how the scheduler is asked for job names and accounts (a
        simulated login node); unless given, the ``[jobs] login_node`` over SSH when set."""
        self.config = config
        DeliveryView.__init__(self, config.contract)
        self.read_only = read_only
        self.targets = tuple(targets)
        self.data_dir = data_dir
        self._clock = clock
        self._tick_s = config.fleet.interval
        # gpufleet's entry point did this already; a runtime embedded elsewhere (a bench)
        # needs it before its threads (the history resume below is one) take arenas.
        configure_malloc()
        specs = [NodeSpec(t.name, t.expected_gpus) for t in self.targets]
        # One watchdog measures the controller's own ticks: the state counts no silence
        # across a stall (fleet.health.liveness) and history records that same stall as
        # unmonitored time (history.blindness).
        self.watchdog = TickWatchdog(self._tick_s)
        self._state = FleetState(specs, config.health, watchdog=self.watchdog)
        witnesses = config.sla.witness if config.sla is not None else ()
        self.history = HistoryRecorder(
            data_dir,
            config.history,
            clock=clock,
            tick_s=self._tick_s,
            witnesses=witnesses,
            watchdog=self.watchdog,
            expected_gpus=sum(spec.expected_gpus for spec in specs),
        )
        self.link_events = LinkEventDiffer()  # link changes between ticks -> events table
        self.xid_repeats = XidRepeatFilter()  # a burst of identical XIDs -> two history rows
        recording = data_dir is not None and self.history.recording
        self.drift = DriftTracker(data_dir / STORE_NAME if data_dir and recording else None)
        self.notices: tuple[str, ...] = ()
        # Why `S` has nothing to log into (the demo's simulated nodes run no shell).
        self.login_refusal: str | None = None
        if data_dir is not None and not self.history.recording:
            self.notices = (self.history.lock_holder_message,)
        ssh_options = ssh_options or SshOptions()
        self._ssh_options = ssh_options
        self._ssh = SshFleet(self.targets, self._state.ingest, ssh_options, clock)
        self.prober = FleetProber(self.targets, ssh_options, config.probes.settings(), data_dir)
        # The event log, acknowledgements and alerts; transitions recorded with the history.
        history = DeskHistory(data_dir, record=recording) if data_dir is not None else None
        self.desk = OperatorDesk(config.alerts, data_dir, clock, history=history)
        # Job names, accounts and partitions from the scheduler, asked on its own schedule.
        self.scheduler = self._scheduler_watch(job_metadata)
        if self.scheduler is not None:
            self._state.jobs = self.scheduler.jobs
        self._listeners: list[SnapshotListener] = []
        self._latest: FleetSnapshot | None = None
        self._sla: SlaSummary | None = None
        self._sla_at = float("-inf")
        self._sla_refresh: asyncio.Future[SlaSummary | None] | None = None
        self._summarize = sla_summary or _ledger_sla_summary
        self.ledgers = LedgerFigures()  # repairs and delivery, month to date
        self.campaign = CampaignView(
            data_dir, config.acceptance, config.contract or ContractSection()
        )
        self._ledgers_at = float("-inf")
        self._ledgers_refresh: asyncio.Future[LedgerResult] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._stopped = False
        self.heap = HeapFreezer()
        self.pipeline = TickPipeline(
            self._state,
            self.drift,
            self.link_events,
            probe_verdicts=self.prober.decorate,
            record=self._record,
            figures=self._with_figures,
        )

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Connect to every node and start ticking."""
        # Start-up objects (config, modules, targets) live for the whole run: keeping them
        # out of the collector's generations removes the full-GC pauses seen in tick times.
        freeze_live_heap()
        gc.set_threshold(*gc_thresholds(gc.get_threshold()))
        await self._ssh.start()
        if self.scheduler is not None:
            self.scheduler.start()
        self._ticker = asyncio.create_task(self._tick_forever(), name="fleet-tick")

    async def stop(self) -> None:
        """Stop ticking, close every connection, flush and close the history (once)."""
        if self._stopped:
            return
        self._stopped = True
        if self._ticker is not None:
            await cancel_all([self._ticker], STOP_GRACE_S)  # a dropped cancel is sent again
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker  # done: what it raised, if anything, is raised here
            self._ticker = None
        if self.scheduler is not None:
            await self.scheduler.stop()
        await self._ssh.stop()
        await self.sla_refreshed()  # its thread reads the books that closing writes
        await self.ledgers_refreshed()
        self.tick()  # the last state of the fleet reaches history and listeners
        self.drift.flush()  # first sightings not yet written (fleet.drift)
        self.history.close()
        self.desk.close()

    def _scheduler_watch(self, run: Runner | None) -> SchedulerWatch | None:
        """The login-node query, when one is configured or given (else None)."""
        section = self.config.jobs
        if run is None and section.login_node is not None:
            from ledger.jobs.login_node import ssh_runner

            # The login node is trusted and reached as the nodes are: the same
            # known_hosts and key (a host key is never accepted unverified).
            fleet = self.config.fleet
            known = None if fleet.known_hosts is None else os.path.expanduser(fleet.known_hosts)
            key = fleet.identity_file
            keys = None if key is None else [os.path.expanduser(key)]
            run = ssh_runner(section, known_hosts=known, client_keys=keys)
        if run is None:
            return None
        return SchedulerWatch(section, run, self._clock, lambda entry: self.desk.note([entry]))

    @property
    def ready(self) -> bool:
        """True once every node has been tried at least once."""
        return bool(self._ssh.tried_all)

    async def _tick_forever(self) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            next_at += self._tick_s
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            try:
                # Lines read in this loop turn count in this tick, not the next one.
                self._ssh.take_queued_lines()
            except Exception:  # a line's handler failed; the tick runs all the same
                log.exception("lines queued before the tick failed")
            try:
                self.tick()
            except Exception:  # a bug in one tick must not freeze the dashboard forever
                log.exception("fleet tick failed")

    def tick(self, now: float | None = None) -> FleetSnapshot:
        """Run the tick's pipeline and hand the snapshot to the desk and every listener."""
        now = self._clock() if now is None else now
        snapshot = self.pipeline.run(now)
        self._latest = snapshot
        self.desk.observe(snapshot)

        self.heap.observe(snapshot, self.ready, self._state.connections_ended)
        for listener in tuple(self._listeners):
            try:
                listener(snapshot)
            except Exception:
                log.exception("snapshot listener %r failed", listener)
        return snapshot

    def _record(self, snapshot: FleetSnapshot) -> None:
        # History keeps a burst of identical XIDs as two rows; listeners see every one.
        self.history.record(self.xid_repeats.for_history(snapshot, final=self._stopped))

    def _with_figures(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        now = snapshot.taken_at
        self._refresh_ledgers(now)
        return replace(
            snapshot,
            utilization=self.history.utilization_summary(now),
            sla=self._sla_summary(now),
        )

    def _refresh_ledgers(self, now: float) -> None:
        """Start a refresh of the repairs and delivery ledgers when one is due (on the
        SLA summary's schedule, on a thread: each reads a month of history from disk).
        Without an event loop (a bench ticking from plain code) there is none."""
        if self.data_dir is None or self._stopped or self._ledgers_refresh is not None:
            return
        if now - self._ledgers_at < SLA_REFRESH_S:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._ledgers_at = now
        # The kept month: each closed hour judged once (one refresh at a time uses it).
        delivery = self.ledgers.delivery
        args = (self.data_dir, self.config.contract, self.config.energy, now, delivery)
        work = asyncio.to_thread(compute_figures, *args)
        self._ledgers_refresh = refresh = loop.create_task(work, name="ledger-refresh")
        refresh.add_done_callback(self._ledgers_refreshed)

    def _ledgers_refreshed(self, refresh: asyncio.Future[LedgerResult]) -> None:
        self._ledgers_refresh = None
        if refresh.cancelled() or refresh.exception() is not None:
            return
        self.desk.note(self.ledgers.update(refresh.result()))

    async def ledgers_refreshed(self) -> LedgerResult:
        """Wait for the ledger refresh in progress, if any; the figures served next."""
        refresh = self._ledgers_refresh
        if refresh is not None:
            await asyncio.wait((refresh,))
        return self.ledgers.latest

    def campaign_report(self) -> Mapping[str, Any] | None:
        """The acceptance campaign on record in the data directory, as last read (at most
        once a second, on a thread); None when there is none."""
        return self.campaign.report()

    def ledger_families(self) -> str:
        """The repairs and delivery families for /metrics, as last refreshed."""
        return self.ledgers.latest.families

    def repair_history(self, node: str) -> tuple[tuple[RepairLine, ...], tuple[str, ...]]:
        """``node``'s repairs this month as the node screen lists them, and the serials
        its GPUs have had (in those repairs, then the ones it reports now)."""
        from ledger.repairs.log_line import repair_line
        from tui.widgets.repair_history import RepairHistoryRow

        records, breached, serials = self.ledgers.repair_rows(node)
        rows = tuple(
            RepairHistoryRow(
                detected=iso_minute(r.detected_ms),
                line=repair_line(r),
                kind=r.kind,
                breached=r.detected_ms in breached,
            )
            for r in records
        )
        snapshot = self._latest
        live = next((n for n in snapshot.nodes if n.name == node), None) if snapshot else None
        now = [g.serial for g in live.gpus if g.serial] if live is not None else []
        return rows, tuple(dict.fromkeys((*serials, *now)))

    def _sla_summary(self, now: float) -> SlaSummary | None:
        """The latest month-to-date SLA figures; a refresh is started when one is due.

        The refresh reads a month of intervals (from disk, when another process
        records), which takes longer than a tick: it runs on a thread and its result
        shows from the next tick after it ends.
        """
        contract = self.config.sla
        if contract is None:
            return None
        due = now - self._sla_at >= SLA_REFRESH_S and self._sla_refresh is None
        if due and not self._stopped:
            self._sla_at = now
            source = self.history.ledger_source()  # the books copied here, on their loop
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # ticked from plain code (a bench, a script): no loop
                self._sla = self._summarize_safely(source, contract, now)
            else:
                work = asyncio.to_thread(self._summarize_safely, source, contract, now)
                self._sla_refresh = refresh = loop.create_task(work, name="sla-refresh")
                refresh.add_done_callback(self._sla_refreshed)
        return self._sla

    def _summarize_safely(
        self, source: LedgerInputs | Path, contract: SlaSection, now: float
    ) -> SlaSummary | None:
        try:
            return self._summarize(source, contract, now)
        except Exception:
            log.exception("SLA summary failed")
            return self._sla  # the figures shown until now stay

    def _sla_refreshed(self, refresh: asyncio.Future[SlaSummary | None]) -> None:
        self._sla_refresh = None
        if not refresh.cancelled():
            self._sla = refresh.result()

    async def sla_refreshed(self) -> SlaSummary | None:
        """Wait for the SLA refresh in progress, if any; the figures the next tick shows."""
        refresh = self._sla_refresh
        if refresh is not None:
            await asyncio.wait((refresh,))
        return self._sla

    # -- FleetFacade -------------------------------------------------------------------

    def latest(self) -> FleetSnapshot | None:
        return self._latest

    def subscribe(self, listener: SnapshotListener) -> Callable[[], None]:
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def utilization_series(self, window_s: float) -> Sequence[UtilizationPoint]:
        return self.history.utilization_series(window_s, self._clock())

    def gpu_series(self, node: str, gpu: int, points: int = 120) -> GpuSeries:
        return self.history.gpu_series(node, gpu, points)

    async def export(self, request: ExportRequest) -> Path:
        from ledger.export import export_history

        if self.data_dir is None:
            raise NotAvailable("this fleet records no history (no data directory)")
        self.history.queue_flush()  # the books belong to the loop; the wait does not
        await asyncio.to_thread(self.history.wait_written)
        return await asyncio.to_thread(
            export_history,
            self.data_dir,
            request,
            rolling_window_s=self.config.history.export_rolling_window_s,
        )

    async def probe(
        self, node: str, suite: Suite = "quick", on_progress: ProbeListener | None = None
    ) -> ProbeReport:
        if self.read_only:
            raise ReadOnlyFleet("gpufleet runs read-only: probes are disabled")
        if node not in {t.name for t in self.targets}:
            raise UnknownNode(f"{node} is not part of the fleet")
        return await self.prober.probe(node, suite, on_progress)

    def cancel_probe(self, node: str) -> bool:
        return self.prober.cancel(node)

    def broken_intervals(self, node: str) -> Sequence[BrokenInterval]:
        """The node's intervals other than up, as history records them, newest first.

        Reads the recorder's books, which the event loop owns: call it from the loop.
        """
        rows = [i for i in self.history.states.intervals() if i.node == node and i.state != "up"]
        return [
            BrokenInterval(
                i.state,
                i.start_ms / 1000,
                None if i.end_ms is None else i.end_ms / 1000,
                i.reasons,
            )
            for i in reversed(rows)
        ]

    def ssh_argv(self, node: str) -> list[str] | None:
        """The ``ssh`` command that logs into ``node`` as gpufleet reaches it.

        Raises:
            NotAvailable: the fleet's nodes have no shell to log into (``login_refusal``).
        """
        if self.login_refusal is not None:
            raise NotAvailable(self.login_refusal)
        target = next((t for t in self.targets if t.name == node), None)
        return None if target is None else ssh_login_argv(target, self._ssh_options)

    def probe_report(self, node: str) -> ProbeReport | None:
        return self.prober.report(node)

    async def processes(self, node: str) -> ProcessListing:
        """The compute processes on ``node``'s GPUs, read now over its own connection."""
        session = self._ssh.session(node)
        if session is None:
            raise UnknownNode(f"{node} is not part of the fleet")
        return await request_processes(session)
