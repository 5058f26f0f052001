"""The monitor's own gaps with their causes: why a stretch of time is unmonitored.

Coverage says *that* the controller was not observing; this book says *why* when the
controller knows (it stalled, its network was down). Time outside every coverage
span with no gap row is "controller not running". A session writes its rows to
``monitor_gaps/date=<day of the gap's start>/<session>.parquet`` (layout version 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

import polars as pl

from history.layout import MONITOR_GAPS, SCHEMAS, day_of_ms, days_between, read_table


@dataclass(frozen=True, slots=True)
class MonitorGap:
    """The controller could not observe the fleet from ``start_ms`` to ``end_ms``."""

    start_ms: int
    end_ms: int
    cause: str


class GapBook:
    """This session's gaps, by the day file they are written to."""

    def __init__(self, session_file: str) -> None:
        self.session_file = session_file
        self.gaps: list[MonitorGap] = []
        self.earlier: list[MonitorGap] = []  # earlier sessions' (on resume)
        self._dirty_days: set[date] = set()

    def add(self, start_ms: int, end_ms: int, cause: str) -> None:
        """Note a gap (merged into the previous one when they touch and share the cause)."""
        if end_ms <= start_ms:
            return
        last = self.gaps[-1] if self.gaps else None
        if last is not None and last.cause == cause and start_ms <= last.end_ms:
            self.gaps[-1] = MonitorGap(last.start_ms, max(last.end_ms, end_ms), cause)
        else:
            self.gaps.append(MonitorGap(start_ms, end_ms, cause))
        self._dirty_days.add(day_of_ms(self.gaps[-1].start_ms))

    def all(self) -> list[MonitorGap]:
        """Earlier sessions' gaps and this one's, in time order."""
        return sorted(self.earlier + self.gaps, key=lambda g: (g.start_ms, g.end_ms))

    def take_dirty(self) -> dict[str, pl.DataFrame]:
        """The day files that changed, as data-directory-relative path → frame."""
        out = {}
        for day in sorted(self._dirty_days):
            rows = [g for g in self.gaps if day_of_ms(g.start_ms) == day]
            frame = pl.DataFrame(
                {
                    "start": [g.start_ms for g in rows],
                    "end": [g.end_ms for g in rows],
                    "cause": [g.cause for g in rows],
                },
                schema={"start": pl.Int64(), "end": pl.Int64(), "cause": pl.String()},
            ).cast(SCHEMAS[MONITOR_GAPS])  # type: ignore[arg-type]
            out[f"{MONITOR_GAPS}/date={day.isoformat()}/{self.session_file}"] = frame
        self._dirty_days.clear()
        return out


def load_gaps(data_dir: Path, first: date, last: date) -> list[MonitorGap]:
    """Gaps recorded on the days ``first`` to ``last`` (none in a version-1 directory)."""
    frame = read_table(data_dir, MONITOR_GAPS, list(days_between(first, last)))
    frame = frame.select(
        pl.col("start").dt.epoch("ms"), pl.col("end").dt.epoch("ms"), pl.col("cause")
    )
    gaps = [MonitorGap(int(s), int(e), c or "") for s, e, c in frame.iter_rows() if s is not None]
    return sorted(gaps, key=lambda g: (g.start_ms, g.end_ms))
