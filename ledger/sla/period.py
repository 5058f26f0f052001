"""SLA periods: calendar months in UTC, or a month to date."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class Period:
    """The part of ``month`` being judged: ``[start_ms, end_ms)``, end at most the month's end."""

    month: str  # "YYYY-MM"
    start_ms: int
    end_ms: int
    month_end_ms: int

    @property
    def days_in_month(self) -> int:
        """Days of the calendar month (the bill is for all of them)."""
        return (self.month_end_ms - self.start_ms) // DAY_MS

    @property
    def first_day(self) -> date:
        """The month's first day."""
        return _day(self.start_ms)

    @property
    def last_day(self) -> date:
        """The last day the period touches."""
        return _day(max(self.start_ms, self.end_ms - 1))

    def days(self) -> list[date]:
        """Every day the period touches, in order."""
        first, last = self.first_day, self.last_day
        return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def month_period(month: str, now_ms: int | None = None) -> Period:
    """The period of ``month`` ("YYYY-MM"); cut at ``now_ms`` when the month is not over.

    Raises:
        ValueError: ``month`` is not YYYY-MM, or it starts after ``now_ms``.
    """
    match = _MONTH.match(month)
    if match is None or not 1 <= int(match.group(2)) <= 12:
        raise ValueError(f"expected a month as YYYY-MM, got {month!r}")
    year, mon = int(match.group(1)), int(match.group(2))
    start = datetime(year, mon, 1, tzinfo=UTC)
    days = calendar.monthrange(year, mon)[1]
    start_ms = int(start.timestamp()) * 1000
    month_end_ms = start_ms + days * DAY_MS
    end_ms = month_end_ms if now_ms is None else min(month_end_ms, now_ms)
    if end_ms <= start_ms:
        raise ValueError(f"{month} has not started yet")
    return Period(month, start_ms, end_ms, month_end_ms)


def month_of(t_ms: int) -> str:
    """The UTC month holding ``t_ms`` as "YYYY-MM"."""
    return datetime.fromtimestamp(t_ms / 1000, UTC).strftime("%Y-%m")


def _day(t_ms: int) -> date:
    return datetime.fromtimestamp(t_ms / 1000, UTC).date()
