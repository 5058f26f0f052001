"""Coverage: the spans during which a recorder was running, extended as it runs.

A session writes its spans, cut at UTC midnight, to ``coverage/date=D/<session>.parquet``
and rewrites that small file as the span grows; a pause longer than the configured gap
ends a span, so the pause counts as unmonitored.
"""

from __future__ import annotations

from datetime import date

import polars as pl

from history.layout import COVERAGE, SCHEMAS, day_of_ms, day_start_ms

DAY_MS = 86_400_000


class CoverageBook:
    """This session's spans plus the spans earlier sessions left on disk."""

    def __init__(self, session_file: str, gap_s: float) -> None:
        self.session_file = session_file
        self.gap_ms = round(gap_s * 1000)
        self.earlier: list[tuple[int, int]] = []
        self.spans: list[list[int]] = []  # [start_ms, end_ms] of this session
        self._dirty_days: set[date] = set()
        self._cut = False

    def cut(self) -> None:
        """End the current span where it is: the next observation starts a new one."""
        self._cut = True

    def extend(self, t_ms: int) -> None:
        """The recorder was running at ``t_ms``."""
        cut, self._cut = self._cut, False
        if self.spans and not cut and 0 <= t_ms - self.spans[-1][1] <= self.gap_ms:
            self._dirty_days.update(_days(self.spans[-1][1], t_ms))
            self.spans[-1][1] = t_ms
        elif not self.spans or t_ms > self.spans[-1][1]:
            self.spans.append([t_ms, t_ms])
            self._dirty_days.add(day_of_ms(t_ms))

    def all_spans(self) -> list[tuple[int, int]]:
        """Every known span (earlier sessions and this one), in start order."""
        return sorted(self.earlier + [(s, e) for s, e in self.spans])

    def last_end_ms(self) -> int | None:
        """Where the latest known span ends, or None."""
        spans = self.all_spans()
        return max(e for _, e in spans) if spans else None

    def take_dirty(self) -> dict[str, pl.DataFrame]:
        """This session's files that changed, as data-directory-relative path → frame."""
        out = {}
        for day in sorted(self._dirty_days):
            lo, hi = day_start_ms(day), day_start_ms(day) + DAY_MS
            rows = [(max(s, lo), min(e, hi)) for s, e in self.spans if s < hi and e >= lo]
            frame = pl.DataFrame(
                {"start": [r[0] for r in rows], "end": [r[1] for r in rows]},
                schema={"start": pl.Int64(), "end": pl.Int64()},
            ).cast(SCHEMAS[COVERAGE])  # type: ignore[arg-type]
            out[f"{COVERAGE}/date={day.isoformat()}/{self.session_file}"] = frame
        self._dirty_days.clear()
        return out


def _days(from_ms: int, to_ms: int) -> list[date]:
    first, last = day_of_ms(from_ms), day_of_ms(to_ms)
    days = [first]
    while days[-1] < last:
        days.append(day_of_ms(day_start_ms(days[-1]) + DAY_MS))
    return days
