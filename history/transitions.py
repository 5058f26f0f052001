"""The ``transitions`` table: GPU and port verdict changes and connection changes.

Node states, events and probe runs have their own tables; what the event log adds from
consecutive snapshots (a GPU going ``fail`` and back to ``ok``, a port degrading, a
node's connection dropping and coming back) is recorded here so the log shows it
after a restart.

Layout, like the other tables: ``<data_dir>/transitions/date=YYYY-MM-DD/<HH>-<session>
.parquet`` (UTC day and hour of the rows). A session rewrites its own hour file whole,
atomically (``layout.write_atomic``: temporary name, fsync, rename), at most every
:data:`FLUSH_S` seconds when it has new rows and when it closes; so a crash loses at
most the last few seconds and a reader (DuckDB included) only ever sees complete
files. Writes run on one background thread, in order.

Columns: ``ts`` (ms, UTC), ``node``, ``kind`` (``gpu`` | ``port`` | ``connection``),
``gpu`` (index or null), ``verdict`` (the verdict or connection status entered),
``severity`` (``bad`` | ``warn`` | ``good`` | ``info``), ``text`` (the log line).
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from fleet.event_log import LogEntry
from history.layout import partition_dir, partition_files, write_atomic

log = logging.getLogger(__name__)

TRANSITIONS = "transitions"
PERSISTED_KINDS = frozenset(("gpu", "port", "connection"))
FLUSH_S = 5.0
HOUR_MS = 3_600_000
SCHEMA: dict[str, pl.DataType] = {
    "ts": pl.Datetime("ms", "UTC"),
    "node": pl.String(),
    "kind": pl.String(),
    "gpu": pl.UInt16(),
    "verdict": pl.String(),
    "severity": pl.String(),
    "text": pl.String(),
}


class TransitionJournal:
    """Records one session's transitions into the ``transitions`` table.

    Args:
        data_dir: the history directory (the caller holds its recorder lock).
        flush_s: the longest time new rows wait before their hour file is rewritten.
    """

    def __init__(self, data_dir: Path, flush_s: float = FLUSH_S) -> None:
        self.data_dir = data_dir
        self._flush_s = flush_s
        started = datetime.now(UTC)
        self.session = f"{started:%Y%m%dT%H%M%S}-{os.getpid()}-{secrets.token_hex(3)}"
        self._hours: dict[int, list[dict[str, object]]] = {}
        self._dirty: set[int] = set()
        self._flushed_at = float("-inf")
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="transitions-writer")
        self._pending: list[Future[None]] = []
        self._failed = False

    def add(self, entries: Iterable[LogEntry], now: float) -> None:
        """Keep the GPU, port and connection entries; write when :data:`FLUSH_S` passed."""
        for entry in entries:
            if entry.kind not in PERSISTED_KINDS:
                continue
            ms = int(entry.t * 1000)  # truncated: the log's key is the whole second
            hour = ms // HOUR_MS
            self._hours.setdefault(hour, []).append(_row(entry, ms))
            self._dirty.add(hour)
        if self._dirty and now - self._flushed_at >= self._flush_s:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        """Hand every changed hour file to the writer thread (returns at once)."""
        self._flushed_at = now if now is not None else self._flushed_at
        current = max(self._hours, default=0)
        for hour in sorted(self._dirty):
            frame = pl.DataFrame(self._hours[hour], schema=SCHEMA, orient="row")
            self._pending.append(self._pool.submit(self._write, hour, frame))
        self._dirty.clear()
        # Hours before the last two are complete on disk: their rows need not stay here.
        for hour in [h for h in self._hours if h < current - 1]:
            del self._hours[hour]
        self._pending = [f for f in self._pending if not f.done()]

    def close(self) -> None:
        """Write what is left and wait for the writer."""
        self.flush()
        self._pool.shutdown(wait=True)

    def _write(self, hour: int, frame: pl.DataFrame) -> None:
        ms = hour * HOUR_MS
        day = datetime.fromtimestamp(ms / 1000, UTC).date()
        name = f"{hour % 24:02d}-{self.session}.parquet"
        try:
            write_atomic(partition_dir(self.data_dir, TRANSITIONS, day) / name, frame)
        except OSError:
            # A full disk must not stop the dashboard; say it once, keep the rows for later.
            if not self._failed:
                log.exception("could not record transitions in %s", self.data_dir)
            self._failed = True


def _row(entry: LogEntry, ms: int) -> dict[str, object]:
    return {
        "ts": datetime.fromtimestamp(ms / 1000, UTC),
        "node": entry.node,
        "kind": entry.kind,
        "gpu": entry.gpu,
        "verdict": entry.verdict,
        "severity": entry.severity,
        "text": entry.text,
    }


def read_transitions(data_dir: Path, days: list[date] | None = None) -> pl.DataFrame:
    """Every readable row (of ``days`` when given); a damaged file is skipped with a warning."""
    frames = []
    for path in partition_files(data_dir, TRANSITIONS, days):
        try:
            frame = pl.read_parquet(path)
            frames.append(
                frame.select(
                    pl.col(n).cast(t) if n in frame.columns else pl.lit(None, t).alias(n)
                    for n, t in SCHEMA.items()
                )
            )
        except Exception as exc:  # polars raises several types for damaged files
            log.warning("skipping unreadable transitions file %s: %s", path, exc)
    return pl.concat(frames) if frames else pl.DataFrame(schema=SCHEMA)


def transition_entries(frame: pl.DataFrame, since: float, until: float) -> list[LogEntry]:
    """The rows between ``since`` and ``until`` (unix seconds) as log entries."""
    ms = pl.col("ts").dt.epoch("ms")
    window = frame.filter((ms >= since * 1000) & (ms <= until * 1000))
    severities = ("bad", "warn", "good", "info")
    return [
        LogEntry(
            row["ts"].timestamp(),
            row["node"],
            row["kind"],
            row["text"] or "",
            row["severity"] if row["severity"] in severities else "info",
            row["gpu"],
            row["verdict"],
        )
        for row in window.iter_rows(named=True)
    ]
