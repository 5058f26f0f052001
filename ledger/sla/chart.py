"""Inline SVG for the HTML claim: hourly fleet utilization and daily availability.

Drawn by hand (no plotting library, no script): two panels sharing the month's time
axis. Colours are CSS classes defined by the page, so the chart follows its theme.
Axes are fixed (utilization 0-100 %, availability from a floor set by the contract's
lowest tier), so two claims compare at a glance; a lone point is drawn as a dot; date
labels are centred and kept inside the frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

WIDTH, PANEL, GAP, LEFT, RIGHT = 900, 160, 40, 56, 40
CLIPPED_STUB = 6  # px of a bar whose day is below the axis floor
LABEL_HALF_WIDTH = 34  # half the width of a "2026-09-10" label at 11 px
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
    runs: list[list[tuple[float, float]]] = []
    previous = None
    for hour, value in hourly:
        if previous is None or hour - previous > 3_600_000:
            runs.append([])
        runs[-1].append((_x(hour, start_ms, end_ms), _y(value, 0, 100, top)))
        previous = hour
    for run in runs:
        if len(run) == 1:  # a polyline of one point draws nothing
            x, y = run[0]
            parts.append(f'<circle class="util-dot" cx="{x:.1f}" cy="{y:.1f}" r="2.5"/>')
        else:
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            parts.append(f'<polyline class="util" points="{points}"/>')
    return parts


def availability_floor(tier_thresholds: Sequence[float], slo: float) -> float:
    """The availability axis starts a little below the contract's lowest threshold."""
    lowest = min([*tier_thresholds, slo])
    return max(0.0, float(int(lowest // 5) * 5 - 5))


def availability_panel(
    daily: Sequence[dict[str, Any]], slo: float, lo: float, start_ms: int, end_ms: int
) -> list[str]:
    """Daily availability as bars on a fixed axis from ``lo`` to 100 (lower days clip)."""
    top = 24.0 + PANEL + GAP + 24
    parts = _axis(top, lo, 100, "Availability, % (daily; unmonitored days left blank)")
    for i, day in enumerate(daily):
        value = day["availability_percent"]
        if value is None:
            continue
        x0 = _x(start_ms + i * DAY_MS, start_ms, end_ms)
        x1 = _x(min(end_ms, start_ms + (i + 1) * DAY_MS), start_ms, end_ms)
        # A day below the axis floor keeps a stub and says its value: never a blank.
        y = min(_y(max(value, lo), lo, 100, top), top + PANEL - CLIPPED_STUB)
        css = "avail" if value >= slo else "avail below"
        parts.append(
            f'<rect class="{css}" x="{x0 + 1:.1f}" y="{y:.1f}" width="{max(1.0, x1 - x0 - 2):.1f}" '
            f'height="{top + PANEL - y:.1f}"><title>{day["date"]}: {value:.3f} %</title></rect>'
        )
        if value < lo:
            parts.append(
                f'<text class="tick clipped" x="{(x0 + x1) / 2:.1f}" y="{y - 3:.1f}" '
                f'text-anchor="middle">{value:.1f}</text>'
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
    floor: float | None = None,
) -> str:
    """The two-panel chart as one ``<svg>`` element."""
    lo = availability_floor((), slo) if floor is None else floor
    height = int(24 + PANEL + GAP + 24 + PANEL + 28)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="utilization and availability">'
    ]
    parts += utilization_panel(hourly, start_ms, end_ms)
    parts += availability_panel(daily, slo, lo, start_ms, end_ms)
    step = 7 if len(daily) > 10 else 1
    for i in range(0, len(daily), step):
        mid = start_ms + i * DAY_MS + min(DAY_MS, end_ms - start_ms - i * DAY_MS) / 2
        x = min(max(_x(mid, start_ms, end_ms), LABEL_HALF_WIDTH), WIDTH - LABEL_HALF_WIDTH)
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{height - 8}" text-anchor="middle">'
            f"{daily[i]['date']}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)
