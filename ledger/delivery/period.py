"""Report periods: a calendar month, an ISO week, or since/until, all in UTC."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from ledger.sla.period import month_period

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def parse_moment(text: str) -> datetime:
    """A date (its 00:00) or a date and time, UTC unless it names its offset.

    Raises:
        ValueError: not ISO 8601.
    """
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"expected an ISO date or time (2026-02-01, 2026-02-01T12:00), got {text[:40]!r}"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def week_bounds(week: str) -> tuple[datetime, datetime]:
    """The ISO week ``YYYY-Www`` as [Monday 00:00, next Monday 00:00) UTC."""
    match = _WEEK.match(week)
    if match is None:
        raise ValueError(f"expected an ISO week as YYYY-Www (2026-W06), got {week[:40]!r}")
    try:
        monday = date.fromisocalendar(int(match.group(1)), int(match.group(2)), 1)
    except ValueError:
        raise ValueError(f"no such ISO week: {week}") from None
    start = datetime(monday.year, monday.month, monday.day, tzinfo=UTC)
    return start, start + timedelta(days=7)


def report_bounds(
    now_ms: int,
    month: str | None = None,
    week: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> tuple[int, int]:
    """[start, end) in ms of the asked period, cut at ``now_ms``; this month by default.

    Raises:
        ValueError: a bad or empty period, or more than one way of giving it.
    """
    if sum(x is not None for x in (month, week, since or until)) > 1:
        raise ValueError("give one of --month, --week or --since/--until")
    if week is not None:
        lo, hi = week_bounds(week)
        start, end = _ms(lo), _ms(hi)
    elif since is not None or until is not None:
        if since is None:
            raise ValueError("--until needs --since")
        start = _ms(parse_moment(since))
        end = now_ms if until is None else _ms(parse_moment(until))
    else:
        if month is None:
            month = datetime.fromtimestamp(now_ms / 1000, UTC).strftime("%Y-%m")
        found = month_period(month)
        start, end = found.start_ms, found.end_ms
    end = min(end, now_ms)
    if end <= start:
        raise ValueError("the period is empty (it ends before it starts, or has not started)")
    return start, end
