"""This session's files: hour files that grow, small files rewritten, one writer thread.

``gpu_minutes`` and ``events`` rows go to ``<table>/date=D/<HH>-<session>.parquet``,
rewritten whole (atomically) as the hour fills; a session never touches another
session's hour files, so a restart inside an hour adds a file beside the old one.
Writes run on one background thread, in order, so rewriting a large hour file does
not stall a tick; :meth:`HistoryStore.wait` is the barrier.

A file is rewritten whole, so its rows stay in memory until it is complete. A large
fleet's hour would hold an hour of rollups (8,000 GPUs: 480,000 rows, ~40 MiB, and a
rewrite of all of it every minute), so a file is complete once it holds
:data:`FILE_ROWS` rows: the hour's next rows begin ``<HH>-<session>_001.parquet``
(the names sort in time order). A small fleet still writes one file an hour.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from history.layout import day_of_ms, write_atomic

log = logging.getLogger(__name__)

HOUR_MS = 3_600_000
# Rows after which an hour file is complete and the hour's next rows start another:
# what the store holds per table (~5 MiB of gpu_minutes rows; 8 minutes of 8,000 GPUs,
# 1.6 minutes of 40,000), and the most one rewrite writes. At 1 << 17 the rows held
# were most of `serve`'s growth from minute 5 to 15 at 1,000 nodes (bench/results/history.md,
# "Whole process, run 10"); more, smaller files cost readers little.
FILE_ROWS = 1 << 16


@dataclass(slots=True)
class _HourFile:
    relpath: str
    frames: list[pl.DataFrame] = field(default_factory=list)
    rows: int = 0


class HistoryStore:
    """Writes the files of one recording session under ``data_dir``."""

    def __init__(self, data_dir: Path, session: str, *, file_rows: int = FILE_ROWS) -> None:
        self.data_dir = data_dir
        self.session = session
        self.file_rows = file_rows
        self._hours: dict[tuple[str, int], _HourFile] = {}
        self._names_used: set[str] = set()
        self._dirty: set[tuple[str, int]] = set()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history-writer")
        self._pending: list[Future[None]] = []

    def append(self, table: str, frame: pl.DataFrame, ts_ms: int) -> None:
        """Add rows whose time is ``ts_ms`` to the table's hour file (written on flush)."""
        if frame.is_empty():
            return
        hour_key = (table, ts_ms // HOUR_MS)
        hour = self._hours.get(hour_key)
        if hour is None:
            hour = self._hours[hour_key] = _HourFile(self._new_name(table, ts_ms))
        hour.frames.append(frame)
        hour.rows += frame.height
        self._dirty.add(hour_key)

    def _new_name(self, table: str, ts_ms: int) -> str:
        day = day_of_ms(ts_ms).isoformat()
        base = f"{table}/date={day}/{(ts_ms // HOUR_MS) % 24:02d}-{self.session}"
        name, seq = f"{base}.parquet", 1
        # A full file's successor, or an hour seen again after it was forgotten. "_"
        # sorts after ".", so the hour's files list in the order they were begun.
        while name in self._names_used:
            name, seq = f"{base}_{seq:03d}.parquet", seq + 1
        self._names_used.add(name)
        return name

    def write_dirty(self) -> None:
        """Queue a rewrite of every hour file that gained rows; let go of full ones."""
        for hour_key in sorted(self._dirty):
            hour = self._hours[hour_key]
            self.write(hour.relpath, pl.concat(hour.frames, rechunk=False))
            if hour.rows >= self.file_rows:  # complete once written: the queue holds it
                del self._hours[hour_key]
        self._dirty.clear()

    def held_rows(self) -> int:
        """Rows kept in memory for files that may be rewritten."""
        return sum(hour.rows for hour in self._hours.values())

    def forget_before(self, ts_ms: int) -> None:
        """Stop holding hour files that end before ``ts_ms`` (they are complete on disk)."""
        for hour_key in [k for k in self._hours if (k[1] + 1) * HOUR_MS <= ts_ms]:
            if hour_key not in self._dirty:
                del self._hours[hour_key]

    def write(self, relpath: str, frame: pl.DataFrame) -> None:
        """Queue an atomic write of ``frame`` to ``data_dir / relpath``."""
        future = self._pool.submit(write_atomic, self.data_dir / relpath, frame)
        future.add_done_callback(_log_failure)
        self._pending = [f for f in self._pending if not f.done()]
        self._pending.append(future)

    def wait(self) -> None:
        """Block until every queued write is on disk (or has failed and been logged)."""
        pending, self._pending = self._pending, []
        for future in pending:
            future.exception()

    def close(self) -> None:
        """Finish the queued writes and stop the writer thread."""
        self.wait()
        self._pool.shutdown(wait=True)


def _log_failure(future: Future[None]) -> None:
    exc = future.exception()
    if exc is not None:
        log.error("writing history failed: %s", exc)
