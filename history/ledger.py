"""What the SLA ledger reads from history: coverage, intervals, gaps and liveness.

Whether a recorder is observing *now* decides how an open interval ends: while a live
recorder (lock held, heartbeat fresh) observes it, it is ongoing and ends now;
otherwise it ends where observation ended, the end of the latest coverage span, so a
report of a stopped history never grows (docs/sla.md, "Intervals end where
observation ended").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from history.gaps import MonitorGap
from history.lock import live_recorder
from history.reader import HistoryReader
from history.states import StateInterval

# A heartbeat older than this means nobody is recording (the recorder flushes every 5 s).
HEARTBEAT_FRESH_S = 20.0


@dataclass(frozen=True, slots=True)
class LedgerInputs:
    """Everything the SLA math needs from history for one period."""

    coverage: list[tuple[int, int]]
    intervals: list[StateInterval]
    gaps: list[MonitorGap] = field(default_factory=list)
    live: bool = True  # a recorder observes now: open intervals are ongoing
    observed_until_ms: int | None = None  # the end of the latest observation

    def open_end_ms(self, now_ms: int) -> int:
        """Where an open interval ends: now while observed live, else the last observation."""
        if self.live or self.observed_until_ms is None:
            return now_ms
        return min(now_ms, self.observed_until_ms)


def last_observation_ms(coverage: list[tuple[int, int]]) -> int | None:
    """The end of the latest coverage span, or None."""
    return max((e for _, e in coverage), default=None)


def load_ledger(
    data_dir: Path, first: date, last: date, now: float, fresh_s: float = HEARTBEAT_FRESH_S
) -> LedgerInputs:
    """The ledger's inputs for the days ``first`` to ``last`` as a reader sees them at ``now``."""
    return read_ledger(HistoryReader(data_dir), first, last, now, fresh_s)


def read_ledger(
    history: HistoryReader, first: date, last: date, now: float, fresh_s: float = HEARTBEAT_FRESH_S
) -> LedgerInputs:
    """:func:`load_ledger` through ``history``, whose reads a report shares."""
    coverage = history.coverage(first, last)
    return LedgerInputs(
        coverage=coverage,
        intervals=history.intervals(last),
        gaps=history.gaps(first, last),
        live=live_recorder(history.data_dir, now, fresh_s) is not None,
        observed_until_ms=last_observation_ms(coverage),
    )
