"""[history] where and how long history is kept (docs/history.md)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from fleet.settings.base import Section

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``"90s"``, ``"15m"``, ``"24h"`` or ``"7d"``.

    Raises:
        ValueError: ``text`` is not a number followed by one of s, m, h, d.
    """
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"expected a duration such as '15m', '24h' or '7d', got {text!r}")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


class HistorySection(Section):
    """[history] where and how long history is kept (docs/history.md)."""

    retention_days: int = Field(default=400, ge=1)
    """Day partitions older than this many days are deleted (a year and a month by default,
    so last year's SLA claims can still be argued)."""
    ring_minutes: int = Field(default=2, ge=1, le=120)
    """Minutes of full-resolution samples kept in memory for sparklines (the node screen
    draws the last 16, a NATS viewer asks for 120: two minutes at a 1 s interval)."""
    flush_interval_s: float = Field(default=5.0, gt=0, le=300)
    """Seconds between writes of node transitions, events and the coverage span."""
    coverage_gap_s: float = Field(default=60.0, gt=0)
    """A pause between ticks longer than this ends a coverage span (the time in between
    counts as unmonitored)."""
    series_days: float = Field(default=8.0, gt=0, le=62)
    """Days of per-minute fleet utilization kept in memory for the plot and its averages."""
    export_rolling_window: str = "7d"
    """Window of the rolling-average column in fleet-level exports ("24h", "7d", ...)."""

    @field_validator("export_rolling_window")
    @classmethod
    def _window_is_a_duration(cls, value: str) -> str:
        parse_duration(value)
        return value

    @property
    def export_rolling_window_s(self) -> float:
        """``export_rolling_window`` in seconds."""
        return parse_duration(self.export_rolling_window)
