"""``HistoryRecorder``: the fleet's memory, in RAM (ring, minute series) and on disk.

Once per tick :meth:`HistoryRecorder.record` writes the tick's columns into the
ring's preallocated arrays and folds it into the minute's sums; a minute boundary
turns the sums into ``gpu_minutes`` rows. Node transitions, events and coverage are
written every ``flush_interval_s``. With no data directory, or when another process holds the
directory's lock, everything works in memory and nothing is written.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from fleet.jobs import JobInterval
from fleet.model import EventRecord, FleetSnapshot, NodeSnapshot, UtilizationSummary
from fleet.records import GpuSeries, UtilizationPoint
from fleet.watchdog import TickWatchdog
from history import events as event_rows
from history.blindness import MonitorBlindness
from history.coverage import CoverageBook
from history.delivery_rows import delivery_rows, port_rows
from history.gaps import GapBook, load_gaps
from history.jobs import JobHistoryWriter
from history.layout import (
    DELIVERY_MINUTES,
    EVENTS,
    GPU_MINUTES,
    NODE_STATES,
    PORT_MINUTES,
    day_of_ms,
    delete_partitions_before,
    partitioned_tables,
    remove_temporaries,
    write_layout_version,
)
from history.ledger import LedgerInputs, last_observation_ms, load_ledger
from history.lock import RecorderLock, lock_is_held, write_heartbeat
from history.reader import load_coverage, load_state_files, recent_days
from history.ring import U8_NULL, ColumnReader, GpuRegistry, TickFrame, tick_columns
from history.rollup import MinuteAccumulator
from history.sample_ring import RING_COLUMNS, SampleRing
from history.section import HistorySection
from history.series import MINUTE_MS, FleetMinuteSeries
from history.states import KEEP_CLOSED_DAYS, NodeStateBook
from history.store import HistoryStore

# A standby (another process records) tries to take the lock over this often.
TAKEOVER_RETRY_S = 1.0

log = logging.getLogger(__name__)


def session_name(started: float) -> str:
    """A file-name-safe, sortable, unique name for one recording session."""
    stamp = datetime.fromtimestamp(started, UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}Z-{secrets.token_hex(3)}"


class HistoryRecorder:
    """Records snapshots into a ring, minute rollups and (when it may) the data directory."""

    def __init__(
        self,
        data_dir: Path | None,
        config: HistorySection,
        *,
        clock: Callable[[], float] = time.time,
        tick_s: float | None = None,
        witnesses: tuple[str, ...] = (),
        expected_gpus: int = 0,
        watchdog: TickWatchdog | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.config = config
        self._clock = clock
        self.session = session_name(clock())
        self.recording = False
        self.standby = False  # another process records; this one takes over when it stops
        self.lock_holder_message = ""
        self.registry = GpuRegistry()
        # Sized once for the fleet's expected GPUs, so the ring's memory is flat from the start.
        self.ring = SampleRing(config.ring_minutes, tick_s or 1.0, expected_gpus)
        self.series = FleetMinuteSeries(config.series_days * 86400)
        self._new_books()
        self.blindness = MonitorBlindness(tick_s, witnesses, watchdog)
        self._last_takeover_try = time.monotonic()
        self._minute = MinuteAccumulator()
        self._events: list[EventRecord] = []
        self._latest_util: float | None = None
        self._last_t: float | None = None  # time of the latest snapshot
        self._last_nodes: tuple[NodeSnapshot, ...] | None = None
        self._minute_nodes: tuple[NodeSnapshot, ...] = ()
        self.last_tick: TickFrame | None = None
        self._columns = ColumnReader()
        self._last_persist = float("-inf")
        self._day: date | None = None
        self._lock: RecorderLock | None = None
        self._store: HistoryStore | None = None
        self._closed = False
        # Scheduler jobs per GPU (docs/jobs.md): closed intervals wait for the next flush;
        # the open ones are rewritten whole at each.
        self.jobs = JobHistoryWriter(data_dir) if data_dir is not None else None
        self._open_jobs: tuple[JobInterval, ...] = ()
        self._jobs_on_disk = False  # the open-jobs file may list jobs: rewrite it
        if data_dir is not None:
            now = clock()
            today = day_of_ms(round(now * 1000))
            self.series.load(data_dir, recent_days(today, config.series_days))
            self._open(data_dir, now)

    # -- opening, resuming and taking over -----------------------------------------------

    def _new_books(self) -> None:
        name = f"{self.session}.parquet"
        self.states = NodeStateBook(session_file=name)
        self.coverage = CoverageBook(name, self.config.coverage_gap_s)
        self.gaps = GapBook(name)

    def _open(self, data_dir: Path, now: float, *, standby: bool = False) -> None:
        today = day_of_ms(round(now * 1000))
        lock = RecorderLock(data_dir)
        try:
            acquired = lock.acquire()
        except OSError as exc:  # not a directory, no permission, read-only file system
            self.lock_holder_message = f"cannot record into {data_dir}: {exc.strerror or exc}"
            if not standby:
                log.warning("%s", self.lock_holder_message)
            return
        if not acquired:
            self.standby = True  # another recorder holds it: take over when it stops
            if standby:
                return  # still held: the holder is alive
            holder = lock.holder() or "another process"
            self.lock_holder_message = (
                f"another gpufleet is recording into {data_dir} ({holder}); "
                "this one shows history but does not record until it stops (standby)"
            )
            log.warning("%s", self.lock_holder_message)
            return
        self._lock, self.recording, self.standby = lock, True, False
        if standby:  # what this process saw as a standby was never its to write
            self.session = session_name(now)
            self._new_books()
        self.lock_holder_message = ""
        remove_temporaries(data_dir)
        self._store = HistoryStore(data_dir, self.session)
        self._resume(data_dir, today)
        self._day = today
        self._apply_retention(today)

    def _resume(self, data_dir: Path, today: date) -> None:
        first = today - timedelta(days=KEEP_CLOSED_DAYS)
        self.coverage.earlier = load_coverage(data_dir, first, today + timedelta(days=1))
        self.gaps.earlier = load_gaps(data_dir, first, today + timedelta(days=1))
        write_layout_version(data_dir)
        self.states.resume_end_ms = self.coverage.last_end_ms()
        for relpath, rows in load_state_files(data_dir).items():
            self.states.adopt(relpath, rows)
        self.states.forget_before(first)

    def _apply_retention(self, today: date) -> None:
        assert self.data_dir is not None
        first_kept = today - timedelta(days=self.config.retention_days)
        keep = frozenset(self.states.open_days())
        for table in partitioned_tables(self.data_dir):  # the probes table too
            deleted = delete_partitions_before(
                self.data_dir, table, first_kept, keep if table == NODE_STATES else frozenset()
            )
            if deleted:
                log.info("history retention: deleted %d day(s) of %s", len(deleted), table)

    # -- recording ------------------------------------------------------------------------

    def _maybe_take_over(self, now: float) -> None:
        """A standby tries the lock now and then: the recorder's death releases it."""
        if self.data_dir is None or not self.standby or self._closed:
            return
        if time.monotonic() - self._last_takeover_try < TAKEOVER_RETRY_S:
            return
        self._last_takeover_try = time.monotonic()
        if lock_is_held(self.data_dir):
            return  # the cheap check: the holder is alive
        holder = self.lock_holder_message
        self._open(self.data_dir, now, standby=True)
        if self.recording:
            log.warning("took over recording into %s (%s)", self.data_dir, holder)

    def record(self, snapshot: FleetSnapshot) -> None:
        """Take in one tick's snapshot (call once per tick, in time order)."""
        self._maybe_take_over(snapshot.taken_at)
        t_ms = round(snapshot.taken_at * 1000)
        tick = self._tick_of(snapshot)
        minute_ms = t_ms - t_ms % MINUTE_MS
        if self._minute.minute_ms is not None and minute_ms > self._minute.minute_ms:
            self._close_minute()
        if self._minute.minute_ms is None:
            self._minute.minute_ms = minute_ms
        self._minute.add(tick)
        self._minute_nodes = snapshot.nodes  # the minute's last readings, for delivery rows
        self.ring.append(tick.t, tick.layout, {c: tick.columns[c] for c in RING_COLUMNS})
        self.last_tick = tick
        util = tick.columns["util"]
        known = util[util != U8_NULL]
        self._latest_util = float(known.mean()) if known.size else None
        blind = self.blindness.observe(snapshot.taken_at, self._last_t, self.coverage, self.gaps)
        self.states.apply(snapshot, blind=blind)
        self._events.extend(snapshot.new_events)
        if self.jobs is not None and self.recording:
            self.jobs.closed(snapshot.ended_jobs)
        self._open_jobs = snapshot.jobs
        self._last_t = snapshot.taken_at
        if snapshot.taken_at - self._last_persist >= self.config.flush_interval_s:
            self._persist(snapshot.taken_at)

    def _tick_of(self, snapshot: FleetSnapshot) -> TickFrame:
        last = self.last_tick
        if last is not None and snapshot.nodes is self._last_nodes:
            # FleetState hands over the very same tuple when no node changed: same values.
            return TickFrame(snapshot.taken_at, last.layout, last.columns)
        self._last_nodes = snapshot.nodes
        layout = self.registry.layout_of(snapshot.nodes)
        # The state's snapshots carry columns; ones built from objects (tests) do not.
        columns = self._columns.frame(snapshot, layout)
        if columns is None:
            columns = tick_columns(snapshot.nodes)
        return TickFrame(snapshot.taken_at, layout, columns)

    def _close_minute(self) -> None:
        minute_ms = self._minute.minute_ms
        rows = self._minute.take(self.registry.identity_frame())
        self._minute.minute_ms = None
        if minute_ms is None or rows.is_empty():
            return
        self.series.add_frame(rows)
        if self._store is not None:
            self._store.append(GPU_MINUTES, rows, minute_ms)
            self._store.append(
                DELIVERY_MINUTES, delivery_rows(self._minute_nodes, minute_ms), minute_ms
            )
            self._store.append(PORT_MINUTES, port_rows(self._minute_nodes, minute_ms), minute_ms)
            self._store.write_dirty()
            self._store.forget_before(minute_ms)

    def _persist(self, now: float) -> None:
        self._last_persist = now
        events, self._events = self._events, []
        if self._store is None:  # in memory only: the books are the history
            self.states.dirty.clear()
            self.coverage.take_dirty()
            self.gaps.take_dirty()
            return
        files = self.states.take_dirty() | self.coverage.take_dirty() | self.gaps.take_dirty()
        for hour_ms, frame in event_rows.by_hour(events):
            self._store.append(EVENTS, frame, hour_ms)
        for relpath, frame in files.items():
            self._store.write(relpath, frame)
        self._store.write_dirty()
        self._write_jobs(now)
        self._heartbeat(now)
        today = day_of_ms(round(now * 1000))
        if self._day is not None and today != self._day:
            self._day = today
            self._store.wait()  # retention must not race a write into an old partition
            self._apply_retention(today)
            self.states.forget_before(today - timedelta(days=KEEP_CLOSED_DAYS))

    def _write_jobs(self, now: float) -> None:
        # Small files, written inline; a fleet that never ran a job writes none.
        if self.jobs is None or not (self._open_jobs or self._jobs_on_disk or self.jobs.pending):
            return
        try:
            self.jobs.flush(self._open_jobs, now)
        except OSError as exc:  # the next flush writes them again
            log.warning("cannot write the jobs history: %s", exc)
            return
        self._jobs_on_disk = bool(self._open_jobs)

    def _heartbeat(self, now: float) -> None:
        assert self.data_dir is not None
        try:
            write_heartbeat(self.data_dir, self.session, now)
        except OSError as exc:  # the next flush tries again; readers see an old heartbeat
            log.warning("cannot write the recorder heartbeat: %s", exc)

    def flush(self) -> None:
        """Write everything recorded so far (except the minute in progress) and wait for it."""
        self.queue_flush()
        self.wait_written()

    def queue_flush(self) -> None:
        """Hand everything recorded so far (except the minute in progress) to the writer
        thread without waiting: cheap enough for the event loop, which owns the books."""
        if not self._closed and self._last_t is not None:
            self._persist(self._last_t)

    def wait_written(self) -> None:
        """Block until what was queued so far is on disk: the slow half of :meth:`flush`,
        safe off the event loop (the writer thread orders the writes; writes queued
        meanwhile may or may not be waited for)."""
        if not self._closed and self._store is not None:
            self._store.wait()

    def close(self) -> None:
        """Roll up the minute in progress, write everything, release the directory."""
        if self._closed:
            return
        self._close_minute()
        self.flush()
        self.series.wait_loaded()  # the resume thread must not outlive the recorder
        self.blindness.close()
        self._closed = True
        if self._store is not None:
            self._store.close()
        if self._lock is not None:
            self._lock.release()

    # -- reading --------------------------------------------------------------------------

    def utilization_series(self, window_s: float, now: float) -> list[UtilizationPoint]:
        """Per-minute fleet utilization in ``(now - window_s, now]`` with its rolling mean.

        ``rolling`` at a minute is the sample-weighted mean over ``window_s`` ending there;
        the minute in progress is the last point.
        """
        return self.series.points(window_s, now, self._minute.partial())

    def gpu_series(self, node: str, gpu: int, points: int) -> GpuSeries:
        """The last ``points`` full-resolution values of one GPU (oldest first)."""
        key = self.registry.key(node, gpu)
        if key is None:
            return GpuSeries(util=(), power_w=(), temp_c=())
        return GpuSeries(
            util=self.ring.series(key, "util", points),
            power_w=self.ring.series(key, "power_w", points),
            temp_c=self.ring.series(key, "temp_c", points),
        )

    def utilization_summary(self, now: float) -> UtilizationSummary:
        """Fleet utilization of the latest tick and its 1-hour and 24-hour averages."""
        partial = self._minute.partial()
        return UtilizationSummary(
            now=self._latest_util,
            avg_1h=self.series.average(now - 3600, now, partial),
            avg_24h=self.series.average(now - 86400, now, partial),
        )

    def sla_inputs(self, first: date, last: date, now: float) -> LedgerInputs:
        """What the SLA ledger needs for a period from ``first`` to ``last``.

        From memory while this recorder records (or has no directory): it observes
        live. From disk when another process records, since its books are complete.
        """
        source = self.ledger_source()
        if isinstance(source, LedgerInputs):
            return source
        return load_ledger(source, first, last, now)

    def ledger_source(self) -> LedgerInputs | Path:
        """What the SLA ledger reads, safe to hand to another thread (call on the loop).

        This recorder's books as they are now, while it records (or has no directory):
        open intervals are copies, since recording closes them in place, and the other
        rows are never changed once written. The data directory when another process
        records: its files are complete, and reading them is slow work for a thread.
        """
        if self.data_dir is None or self.recording:
            spans = self.coverage.all_spans()
            intervals = [i if i.end_ms is not None else replace(i) for i in self.states.intervals()]
            return LedgerInputs(
                spans,
                intervals,
                self.gaps.all(),
                live=not self._closed,
                observed_until_ms=last_observation_ms(spans),
            )
        return self.data_dir

    def wait_resumed(self, timeout: float | None = None) -> bool:
        """Wait until the utilization history of earlier sessions is loaded (True when it is)."""
        return self.series.wait_loaded(timeout)

    def ring_bytes_per_sample(self) -> float:
        """Memory the ring holds per GPU-sample slot (its arrays are allocated whole)."""
        slots = self.ring.slots()
        return self.ring.nbytes() / slots if slots else 0.0
