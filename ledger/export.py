"""Utilization history out of the data directory: parquet, CSV or JSON lines.

Each day partition is read (complete files only, damaged ones skipped with a
warning), aggregated on its own and spilled to a temporary part; the parts are then
streamed into the output, which is renamed into place only when complete. So an
export runs beside a live recorder and never holds a month of rows in memory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl

from fleet.records import ExportRequest
from history.aggregate import UTIL_WEIGHT, aggregate, as_gpu_minutes, with_rolling_mean
from history.layout import GPU_MINUTES, SCHEMAS, days_between, partition_files, read_file
from history.section import parse_duration

Progress = Callable[[int, int], None]  # (steps done, steps in all)
DEFAULT_ROLLING_WINDOW_S = 7 * 86400.0


def parse_time(text: str, now: float) -> datetime:
    """A point in time: a duration back from ``now`` ("7d", "24h") or an ISO date/time (UTC).

    Raises:
        ValueError: ``text`` is neither.
    """
    with contextlib.suppress(ValueError):
        return datetime.fromtimestamp(now - parse_duration(text), UTC)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"expected '7d', '24h' or a date such as 2026-09-01, got {text!r}"
        ) from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def export_history(
    data_dir: Path,
    request: ExportRequest,
    *,
    progress: Progress | None = None,
    rolling_window_s: float = DEFAULT_ROLLING_WINDOW_S,
    now: float | None = None,
) -> Path:
    """Write the utilization history ``request`` asks for and return the path written.

    Raises:
        ValueError: the time range is malformed or empty.
    """
    now = time.time() if now is None else now
    start = parse_time(request.since, now)
    end = (
        datetime.fromtimestamp(now, UTC)
        if request.until is None
        else parse_time(request.until, now)
    )
    if end <= start:
        raise ValueError(
            f"nothing to export: {start:%Y-%m-%d %H:%M} is not before {end:%Y-%m-%d %H:%M}"
        )
    window = timedelta(seconds=rolling_window_s)
    read_from = start - window if request.level == "fleet" else start
    days = list(days_between(read_from.date(), (end - timedelta(microseconds=1)).date()))
    request.path.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-export-", dir=request.path.parent))
    try:
        parts = _spill_days(data_dir, days, request, read_from, end, scratch, progress)
        result = _combine(parts, request, start, window)
        _write(result, request, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if progress is not None:
        progress(len(days) + 1, len(days) + 1)
    return request.path


def _spill_days(
    data_dir: Path,
    days: list[date],
    request: ExportRequest,
    start: datetime,
    end: datetime,
    scratch: Path,
    progress: Progress | None,
) -> list[Path]:
    parts = []
    in_range = (pl.col("ts") >= start) & (pl.col("ts") < end)
    full_resolution = request.level == "gpu" and request.resolution == "1m"
    for i, day in enumerate(days):
        paths = partition_files(data_dir, GPU_MINUTES, [day])
        frames = [frame for path in paths if (frame := read_file(path, GPU_MINUTES)) is not None]
        if frames:
            rows = pl.concat(frames).filter(in_range)
            if full_resolution and _one_file_per_hour(paths):
                rows = as_gpu_minutes(rows)  # no minute can be in two files: nothing to merge
            else:
                rows = aggregate(rows, request.level, request.resolution)
            part = scratch / f"part-{i:05d}.parquet"
            rows.write_parquet(part)
            parts.append(part)
        if progress is not None:
            progress(i + 1, len(days) + 1)
    return parts


def _one_file_per_hour(paths: list[Path]) -> bool:
    # A session writes each minute once, into the file of its hour ("HH-<session>...").
    hours = [p.name.split("-", 1)[0] for p in paths]
    return len(set(hours)) == len(hours)


def _combine(
    parts: list[Path], request: ExportRequest, start: datetime, window: timedelta
) -> pl.LazyFrame:
    if not parts:
        empty = pl.DataFrame(schema=SCHEMAS[GPU_MINUTES])
        frame = aggregate(empty, request.level, request.resolution).lazy()
    else:
        frame = pl.scan_parquet(parts)
    if request.level == "fleet":
        frame = with_rolling_mean(frame.collect(), window).lazy()
    return frame.filter(pl.col("ts") >= start).drop(UTIL_WEIGHT)


def write_frame(frame: pl.DataFrame, request: ExportRequest) -> Path:
    """Write rows that are already an export's (merged elsewhere) as ``request`` asks,
    renamed into place only when complete."""
    request.path.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".tmp-export-", dir=request.path.parent))
    try:
        _write(frame.lazy(), request, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return request.path


def _write(result: pl.LazyFrame, request: ExportRequest, scratch: Path) -> None:
    tmp = scratch / f"out.{request.format}"
    if request.format == "parquet":
        result.sink_parquet(tmp)
    elif request.format == "csv":
        result.sink_csv(tmp, datetime_format="%Y-%m-%dT%H:%M:%SZ")
    else:
        result.sink_ndjson(tmp)
    os.replace(tmp, request.path)
