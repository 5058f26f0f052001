"""Reading what recorders wrote: coverage spans, state intervals, events, rollups.

Used by the SLA report, by exports and by a recorder that resumes. Every reader
skips a damaged file with a warning that names it (see ``layout.read_file``).
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import polars as pl

from history.layout import (
    COVERAGE,
    EVENTS,
    NODE_STATES,
    days_between,
    partition_days,
    read_file,
    read_table,
)
from history.states import StateInterval, from_frame, relpath_of


def load_coverage(data_dir: Path, first: date, last: date) -> list[tuple[int, int]]:
    """Coverage spans (start_ms, end_ms) recorded on the days ``first`` to ``last``."""
    frame = read_table(data_dir, COVERAGE, list(days_between(first, last)))
    frame = frame.select(pl.col("start").dt.epoch("ms"), pl.col("end").dt.epoch("ms"))
    return sorted((int(s), int(e)) for s, e in frame.iter_rows() if s is not None and e is not None)


def load_state_files(data_dir: Path, last: date | None = None) -> dict[str, list[StateInterval]]:
    """Every readable ``node_states`` file up to ``last``, by data-directory-relative path."""
    out: dict[str, list[StateInterval]] = {}
    for day in partition_days(data_dir, NODE_STATES):
        if last is not None and day > last:
            break
        folder = data_dir / NODE_STATES / f"date={day.isoformat()}"
        for path in sorted(folder.glob("[!.]*.parquet")):
            frame = read_file(path, NODE_STATES)
            if frame is not None:
                out[relpath_of(data_dir, path)] = from_frame(frame)
    return out


def load_intervals(data_dir: Path, last: date | None = None) -> list[StateInterval]:
    """Every node state interval that started on or before ``last``, in start order."""
    files = load_state_files(data_dir, last)
    return sorted((i for rows in files.values() for i in rows), key=lambda i: i.start_ms)


def load_events(data_dir: Path, first: date, last: date) -> pl.DataFrame:
    """Events recorded on the days ``first`` to ``last``, in time order."""
    return read_table(data_dir, EVENTS, list(days_between(first, last))).sort("ts")


def recent_days(today: date, days: float) -> list[date]:
    """``today`` and the whole days before it that ``days`` reaches back into."""
    return list(days_between(today - timedelta(days=int(days) + 1), today))
