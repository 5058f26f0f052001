"""The ``jobs`` history table: which job ran on which GPU, from when to when.

One row per (GPU UUID, job, step) interval. Closed intervals go to
``<data_dir>/jobs/date=YYYY-MM-DD/<HHMMSS>-<token>.parquet`` (UTC day of the end),
one file per flush; the intervals still open are rewritten whole to
``<data_dir>/jobs/open.parquet`` at each flush (``end`` null), so a job that is still
running when a GPU fails can be found with its start. Both are written atomically
(``history.layout.write_atomic``) and read by DuckDB as any parquet
(``read_parquet('<data_dir>/jobs/**/*.parquet', hive_partitioning = false)``).
Columns are documented in docs/jobs.md.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from fleet.jobs import JobInterval
from history.layout import partition_dir, write_atomic

log = logging.getLogger(__name__)

JOBS = "jobs"
OPEN_FILE = "open.parquet"
TS = pl.Datetime("ms", "UTC")
JOB_SCHEMA: dict[str, pl.DataType] = {
    "node": pl.String(),
    "gpu": pl.UInt16(),
    "uuid": pl.String(),
    "scheduler": pl.String(),  # slurm | k8s
    "job": pl.String(),  # Slurm job id, or the pod UID
    "step": pl.String(),  # Slurm step; "" for a pod
    "user": pl.String(),
    "account": pl.String(),
    "partition": pl.String(),
    "name": pl.String(),
    "via": pl.String(),  # nvml: processes on the GPU; env: allocated only
    "start": TS,
    "end": TS,  # null: still running at the last flush
}


def intervals_frame(intervals: Sequence[JobInterval]) -> pl.DataFrame:
    """``intervals`` as rows of the table."""
    rows = [
        {
            "node": i.node,
            "gpu": i.gpu,
            "uuid": i.uuid,
            "scheduler": i.scheduler,
            "job": i.job,
            "step": i.step,
            "user": i.user,
            "account": i.account,
            "partition": i.partition,
            "name": i.name,
            "via": i.via,
            "start": _ms(i.start),
            "end": None if i.end is None else _ms(i.end),
        }
        for i in intervals
    ]
    return pl.DataFrame(rows, schema=JOB_SCHEMA)


def _ms(seconds: float) -> datetime:
    return datetime.fromtimestamp(round(seconds, 3), UTC)


class JobHistoryWriter:
    """Buffers closed intervals and writes them, with the open ones, at each flush."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._closed: list[JobInterval] = []

    def closed(self, intervals: Sequence[JobInterval]) -> None:
        """Keep ``intervals`` (each with an end) for the next flush."""
        self._closed.extend(i for i in intervals if i.end is not None)

    @property
    def pending(self) -> bool:
        """True while closed intervals wait for the next flush."""
        return bool(self._closed)

    def flush(self, open_now: Sequence[JobInterval], now: float) -> list[Path]:
        """Write the buffered closed intervals and replace the open file; paths written."""
        written: list[Path] = []
        if self._closed:
            by_day: dict[date, list[JobInterval]] = {}
            for interval in self._closed:
                day = datetime.fromtimestamp(interval.end or now, UTC).date()
                by_day.setdefault(day, []).append(interval)
            stamp = datetime.fromtimestamp(now, UTC)
            for day, intervals in sorted(by_day.items(), key=lambda item: item[0]):
                name = f"{stamp:%H%M%S}-{secrets.token_hex(4)}.parquet"
                path = partition_dir(self._data_dir, JOBS, day) / name
                write_atomic(path, intervals_frame(intervals))
                written.append(path)
            self._closed = []
        open_path = self._data_dir / JOBS / OPEN_FILE
        open_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(open_path, intervals_frame(list(open_now)))
        written.append(open_path)
        return written


def read_job_history(
    data_dir: Path, start: float | None = None, end: float | None = None
) -> pl.DataFrame:
    """Every interval overlapping [start, end), closed ones and those open at the last flush.

    An interval both closed and listed open (a crash between the two writes) is kept
    once, closed. Unreadable files are skipped with a warning.
    """
    frames = []
    root = data_dir / JOBS
    paths = sorted(root.glob("date=*/[!.]*.parquet"))
    if (root / OPEN_FILE).exists():
        paths.append(root / OPEN_FILE)
    for path in paths:
        try:
            frames.append(_in_schema(pl.read_parquet(path)))
        except Exception as exc:  # polars raises several types for damaged files
            log.warning("skipping unreadable jobs history file %s: %s", path, exc)
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=JOB_SCHEMA)
    frame = frame.sort(pl.col("end").is_null()).unique(
        ["node", "uuid", "scheduler", "job", "step", "start"], keep="first", maintain_order=True
    )
    if end is not None:
        frame = frame.filter(pl.col("start") < _ms(end))
    if start is not None:
        frame = frame.filter(pl.col("end").is_null() | (pl.col("end") > _ms(start)))
    return frame.sort(["start", "node", "gpu"])


def _in_schema(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(
        pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype).alias(name)
        for name, dtype in JOB_SCHEMA.items()
    )
