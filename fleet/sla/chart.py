"""Inline SVG for the HTML claim: hourly fleet utilization and daily availability.

Drawn by hand (no plotting library, no script): two panels sharing the month's time
axis. Colours are CSS classes defined by the page, so the chart follows its theme.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

WIDTH, PANEL, GAP, LEFT, RIGHT = 900, 160, 40, 56, 16
DAY_MS = 86_400_000


def _x(t_ms: float, start_ms: int, end_ms: int) -> float:
    return LEFT + (t_ms - start_ms) / max(1, end_ms - start_ms) * (WIDTH - LEFT - RIGHT)


def _y(value: float, lo: float, hi: float, top: float) -> float:
    return top + PANEL - (value - lo) / max(1e-9, hi - lo) * PANEL


def _axis(top: float, lo: float, hi: float, label: str) -> list[str]:
    parts = [f'<text class="label" x="{LEFT}" y="{top - 8}">{label}</text>']
    for value in (lo, (lo + hi) / 2, hi):
        y = _y(value, lo, hi, top)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
        )
        parts.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:g}</text>'
        )
    return parts


def utilization_panel(hourly: Sequence[tuple[int, float]], start_ms: int, end_ms: int) -> list[str]:
    """Hourly fleet utilization as one polyline on a 0-100 % axis (a gap breaks the line)."""
    top = 24.0
    parts = _axis(top, 0, 100, "Fleet GPU utilization, % (hourly)")
    runs: list[list[str]] = []
    previous = None
    for hour, value in hourly:
        if previous is None or hour - previous > 3_600_000:
            runs.append([])
        runs[-1].append(f"{_x(hour, start_ms, end_ms):.1f},{_y(value, 0, 100, top):.1f}")
        previous = hour
    parts += [f'<polyline class="util" points="{" ".join(run)}"/>' for run in runs]
    return parts


def availability_panel(
    daily: Sequence[dict[str, Any]], slo: float, start_ms: int, end_ms: int
) -> list[str]:
    """Daily availability as bars on an axis that starts just below the worst day or the SLO."""
    top = 24.0 + PANEL + GAP + 24
    values = [d["availability_percent"] for d in daily if d["availability_percent"] is not None]
    lo = float(min([*values, slo]) // 1 - 1)
    parts = _axis(top, lo, 100, "Availability, % (daily; unmonitored days left blank)")
    for i, day in enumerate(daily):
        value = day["availability_percent"]
        if value is None:
            continue
        x0 = _x(start_ms + i * DAY_MS, start_ms, end_ms)
        x1 = _x(min(end_ms, start_ms + (i + 1) * DAY_MS), start_ms, end_ms)
        y = _y(value, lo, 100, top)
        css = "avail" if value >= slo else "avail below"
        parts.append(
            f'<rect class="{css}" x="{x0 + 1:.1f}" y="{y:.1f}" width="{max(1.0, x1 - x0 - 2):.1f}" '
            f'height="{top + PANEL - y:.1f}"><title>{day["date"]}: {value:.3f} %</title></rect>'
        )
    slo_y = _y(slo, lo, 100, top)
    parts.append(
        f'<line class="slo" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{slo_y:.1f}" y2="{slo_y:.1f}"/>'
    )
    return parts


def chart_svg(
    hourly: Sequence[tuple[int, float]],
    daily: Sequence[dict[str, Any]],
    slo: float,
    start_ms: int,
    end_ms: int,
) -> str:
    """The two-panel chart as one ``<svg>`` element."""
    height = int(24 + PANEL + GAP + 24 + PANEL + 28)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="utilization and availability">'
    ]
    parts += utilization_panel(hourly, start_ms, end_ms)
    parts += availability_panel(daily, slo, start_ms, end_ms)
    for i in range(0, len(daily), 7):
        x = _x(start_ms + i * DAY_MS, start_ms, end_ms)
        parts.append(f'<text class="tick" x="{x:.1f}" y="{height - 8}">{daily[i]["date"]}</text>')
    parts.append("</svg>")
    return "\n".join(parts)
