"""The HTML claim's chart: a lone point shows, axes are fixed, labels stay inside."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ledger.sla.chart import WIDTH, availability_floor, chart_svg

START = int(datetime(2026, 9, 1, tzinfo=UTC).timestamp()) * 1000
END = int(datetime(2026, 10, 1, tzinfo=UTC).timestamp()) * 1000


def day(i: int, availability: float | None) -> dict[str, object]:
    return {"date": f"2026-09-{i + 1:02d}", "availability_percent": availability,
            "coverage_percent": 100.0, "utilization_percent": 50.0}  # fmt: skip


def test_a_single_hour_of_utilization_is_drawn_as_a_dot() -> None:
    svg = chart_svg([(START + 3_600_000, 42.0)], [day(0, 100.0)], 99.5, START, END, 90)
    assert '<circle class="util-dot"' in svg and "<polyline" not in svg


def test_the_availability_axis_is_fixed_by_the_contract_not_by_the_data() -> None:
    assert availability_floor([99.9, 99.0, 95.0], 99.5) == 90
    good = chart_svg([], [day(0, 100.0)], 99.5, START, END, 90)
    bad = chart_svg([], [day(0, 73.0)], 99.5, START, END, 90)
    ticks = re.compile(r'text-anchor="end">([\d.]+)</text>')
    assert ticks.findall(good) == ticks.findall(bad) == ["0", "50", "100", "90", "95", "100"]


def test_a_day_below_the_floor_keeps_a_stub_and_says_its_value() -> None:
    svg = chart_svg([], [day(0, 73.04)], 99.5, START, END, 90)
    (height,) = re.findall(r'class="avail below"[^>]*height="([\d.]+)"', svg)
    assert float(height) > 0
    assert ">73.0</text>" in svg


def test_date_labels_stay_inside_the_frame_for_a_month() -> None:
    svg = chart_svg([], [day(i, 100.0) for i in range(30)], 99.5, START, END, 90)
    labels = re.findall(r'<text class="tick" x="([\d.]+)" y="[\d.]+" text-anchor="middle">', svg)
    assert len(labels) == 5  # every 7th day
    assert all(30 <= float(x) <= WIDTH - 30 for x in labels)
