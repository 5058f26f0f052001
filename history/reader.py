"""Reading what recorders wrote: coverage spans, state intervals, gaps, events, rollups.

Used by the ledgers, by exports and by a recorder that resumes. Every reader skips a
damaged file with a warning that names it (see ``layout.read_file``).

:class:`HistoryReader` is the one API the ledgers read history through: a report asks
it for each table of its period, and it reads each table once however many parts of
the report (the claim, its appendix, the evidence bundle) ask for it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import date, timedelta
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast

import polars as pl

from history.gaps import MonitorGap, load_gaps
from history.layout import (
    COVERAGE,
    EVENTS,
    GPU_MINUTES,
    NODE_STATES,
    days_between,
    empty_frame,
    partition_days,
    partition_files,
    read_file,
    read_table,
)
from history.probes import read_probe_history
from history.states import StateInterval, from_frame, relpath_of

T = TypeVar("T")


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


class RollupFile(NamedTuple):
    """One ``gpu_minutes`` file in the table's schema."""

    frame: pl.DataFrame
    # The file counted the readings behind each mean itself; files written before
    # ``util_samples`` existed read with ``samples`` in its place.
    util_weighted: bool


def load_rollup_files(data_dir: Path, days: list[date]) -> list[RollupFile]:
    """The readable ``gpu_minutes`` files of ``days``, one frame each, in time order."""
    out = []
    for path in partition_files(data_dir, GPU_MINUTES, days):
        frame = read_file(path, GPU_MINUTES)
        if frame is not None:
            weighted = "util_samples" in pl.read_parquet_schema(path)  # the footer only
            out.append(RollupFile(frame, weighted))
    return out


class HistoryReader:
    """A data directory's history as the ledgers read it: each table once per range.

    Every method returns what the function of the same table in this module (or
    ``history.gaps``, ``history.probes``) returns, read on the first call and handed
    out again to later calls with the same days. Callers must not change what they
    are handed: it is shared.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._read: dict[Hashable, Any] = {}

    def _once(self, key: Hashable, read: Callable[[], T]) -> T:
        if key not in self._read:
            self._read[key] = read()
        return cast(T, self._read[key])

    def coverage(self, first: date, last: date) -> list[tuple[int, int]]:
        """Coverage spans recorded on the days ``first`` to ``last`` (see load_coverage)."""
        return self._once(
            (COVERAGE, first, last), lambda: load_coverage(self.data_dir, first, last)
        )

    def intervals(self, last: date) -> list[StateInterval]:
        """Every state interval that started on or before ``last`` (see load_intervals)."""
        return self._once((NODE_STATES, last), lambda: load_intervals(self.data_dir, last))

    def gaps(self, first: date, last: date) -> list[MonitorGap]:
        """The monitor's own gaps on the days ``first`` to ``last``."""
        return self._once(("gaps", first, last), lambda: load_gaps(self.data_dir, first, last))

    def events(self, first: date, last: date) -> pl.DataFrame:
        """Events recorded on the days ``first`` to ``last``, in time order."""
        return self._once((EVENTS, first, last), lambda: load_events(self.data_dir, first, last))

    def rollup_files(self, days: list[date]) -> list[RollupFile]:
        """The ``gpu_minutes`` files of ``days``, one frame each (see load_rollup_files)."""
        key = (GPU_MINUTES, tuple(days))
        return self._once(key, lambda: load_rollup_files(self.data_dir, days))

    def rollups(self, days: list[date]) -> pl.DataFrame:
        """Every readable ``gpu_minutes`` row of ``days`` (as ``read_table`` reads them)."""
        frames = [f.frame for f in self.rollup_files(days)]
        return pl.concat(frames) if frames else empty_frame(GPU_MINUTES)

    def probes(self, since: float | None = None) -> pl.DataFrame:
        """Probe results ending at or after ``since`` (see ``read_probe_history``)."""
        return self._once(("probes", since), lambda: read_probe_history(self.data_dir, since=since))
