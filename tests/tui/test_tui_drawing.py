"""Pure drawing and formatting, tested without an app."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleet.facade import GpuSnapshot, PortSnapshot
from testkit.snapshots import T0, demo_snapshot
from tui import format as fmt
from tui.draw import gpu_cell, gpu_cells, port_cell, progress_bar, sparkline, util_bar
from tui.grid_rows import header_cells, layout_for, merge, node_cells
from tui.header_view import header_tiles
from tui.node_tables import unreadable_fields
from tui.node_view import summarize
from tui.panels import failed_gpus, link_issue_lines, sla_markup

GPU = GpuSnapshot(index=0, uuid="GPU-x", name="H100", util_gpu=50.0, verdict="ok")


def test_util_bar_follows_utilization() -> None:
    assert [util_bar(u) for u in (0, 50, 100)] == ["▁", "▅", "█"]
    assert util_bar(None) == "·"
    assert util_bar(150) == "█" and util_bar(-3) == "▁"


@pytest.mark.parametrize(
    ("gpu", "cell"),
    [
        (GPU, ("▅", "gpu-ok")),
        (replace(GPU, util_gpu=1.0), ("▁", "gpu-idle")),
        (replace(GPU, verdict="warn"), ("!", "gpu-warn")),
        (replace(GPU, verdict="fail"), ("✗", "gpu-failed")),
        (replace(GPU, verdict="lost", lost=True), ("?", "gpu-lost")),
        (replace(GPU, util_gpu=None), ("·", "gpu-unknown")),
        (None, ("?", "gpu-lost")),
    ],
)
def test_gpu_cell_has_a_glyph_and_a_role(gpu: GpuSnapshot | None, cell: tuple[str, str]) -> None:
    assert gpu_cell(gpu) == cell


def test_missing_gpus_are_lost_slots() -> None:
    cells = gpu_cells([GPU] * 7, expected=8)
    assert len(cells) == 8 and cells[-1] == ("?", "gpu-lost")


def test_port_cells() -> None:
    up = PortSnapshot(name="mlx5_0", kind="ib", state="ACTIVE", rate_gbps=400.0,
                      expected_rate_gbps=400.0, verdict="ok")  # fmt: skip
    assert port_cell(up) == ("●", "link-up")
    assert port_cell(replace(up, rate_gbps=200.0)) == ("◐", "link-degraded")
    assert port_cell(replace(up, symbol_error_rate=0.5)) == ("◐", "link-degraded")
    assert port_cell(replace(up, state="DOWN")) == ("○", "link-down")


def test_sparkline_scales_and_keeps_gaps() -> None:
    assert sparkline([0, 50, 100], 3, top=100) == "▁▅█"
    assert sparkline([None, 10.0], 4) == "   █"
    assert sparkline([], 3) == "   "


@given(st.lists(st.one_of(st.none(), st.floats(0, 1e6)), max_size=50), st.integers(0, 30))
def test_sparkline_is_always_width(values: list[float | None], width: int) -> None:
    assert len(sparkline(values, width)) == width


def test_progress_bar() -> None:
    assert progress_bar(5, 10, 10) == "━━━━━╺────"
    assert progress_bar(10, 10, 4) == "━━━━"
    assert progress_bar(0, 0, 4) == ""


def test_clock_reasons_in_words() -> None:
    assert fmt.clock_reasons(0x48) == "HW slowdown, HW thermal"
    assert (
        fmt.clock_reasons(0x1 | 0x4 | 0x20 | 0x80) == "idle, SW power cap, SW thermal, power brake"
    )
    assert fmt.clock_reasons(0) == "none"
    assert fmt.clock_reasons(None) == "N/A"
    assert fmt.clock_reasons(0x10000) == "other 0x10000"


def test_formatting_missing_values_is_na() -> None:
    assert fmt.pct(None) == fmt.watts(None) == fmt.celsius(None) == fmt.rate(None) == "N/A"
    assert fmt.watts(12_500) == "12.5kW" and fmt.duration(3_900) == "1h05m"
    assert fmt.stamp(T0) == "2026-11-06 21:20"


def test_node_line_shows_lost_gpu_and_reason() -> None:
    snap = demo_snapshot(16)
    node = snap.node("node-0003")
    assert node is not None
    cells = node_cells(node, summarize(node), layout_for(snap.nodes))
    text = "".join(t for t, _ in cells)
    assert "BROKEN" in text and "GPU 5 lost (XID 79)" in text
    assert ("?", "gpu-lost") in cells
    header = header_cells(layout_for(snap.nodes))[0][0]
    assert text.index("BROKEN") == header.index("status")


def test_unreachable_node_shows_no_gpu_data() -> None:
    node = demo_snapshot(16).node("node-0012")
    assert node is not None
    cells = node_cells(node, summarize(node), layout_for([node]))
    assert ("unreachable", "gpu-lost") in [(t.strip(), r) for t, r in cells]
    assert cells.count(("·", "gpu-unknown")) == 8


def test_merge_joins_same_roles() -> None:
    assert merge([("a", "text"), ("b", "text"), ("c", "muted")]) == [("ab", "text"), ("c", "muted")]


def test_failed_gpus_newest_first() -> None:
    rows = failed_gpus(demo_snapshot(16))
    assert [(r.node, r.index, r.verdict) for r in rows] == [
        ("node-0003", 5, "lost"),
        ("node-0007", 2, "fail"),
    ]


def test_link_issues_list_ports_and_nvlink() -> None:
    lines = "\n".join(link_issue_lines(demo_snapshot(16)))
    assert "node-0005 mlx5_3" in lines and "DOWN" in lines and "downed +3" in lines
    assert "node-0009 mlx5_1" in lines and "sym 4.20/s" in lines
    assert "node-0014 GPU 1 NVLink" in lines and "17/18 links" in lines
    assert link_issue_lines(demo_snapshot(16), limit=2)[-1].endswith("… and 2 more[/]")


def test_sla_markup() -> None:
    snap = demo_snapshot(4)
    assert snap.sla is not None
    text = sla_markup(snap.sla)
    assert "99.210%" in text and "below SLO" in text and "4,312.80 USD" in text
    assert "$sla-breach" in text
    assert "not configured" in sla_markup(None).lower() or "No provider contract" in sla_markup(
        None
    )


def test_header_tiles_count_nodes_gpus_and_connecting() -> None:
    snap = demo_snapshot(16)
    tiles = header_tiles(snap)
    assert "15[/]/16 streaming" in tiles.nodes and "4[/] broken" in tiles.broken
    assert tiles.any_broken and tiles.sla_breach and not tiles.connecting
    connecting = replace(snap, nodes=(replace(snap.nodes[0], status="connecting"),
                                      *snap.nodes[1:]))  # fmt: skip
    tiles = header_tiles(connecting)
    assert tiles.connecting and "1 connecting" in tiles.nodes and "━" in tiles.nodes
    assert header_tiles(None).nodes.startswith("waiting")


def test_unreadable_fields_say_why_a_value_is_missing() -> None:
    g = replace(GPU, power_w=None, field_errors=(("power_w", "NVMLError_NotSupported"),))
    assert unreadable_fields(g) == "power_w (NVMLError_NotSupported)"
    assert unreadable_fields(GPU) == "—"


def test_why_column_shows_connection_reason_only_when_not_streaming() -> None:
    node = demo_snapshot(1).nodes[0]
    chatty = replace(node, status_reason="agent 0.1.0 started")
    text = "".join(t for t, _ in node_cells(chatty, summarize(chatty), layout_for([chatty])))
    assert "agent 0.1.0 started" not in text
    stale = replace(chatty, status="stale", status_reason="no sample for 3 intervals")
    text = "".join(t for t, _ in node_cells(stale, summarize(stale), layout_for([stale])))
    assert "stale" in text and "no sample for 3 intervals" in text


def test_a_port_that_flapped_and_came_back_is_failing_not_down() -> None:
    back_up = PortSnapshot(
        name="mlx5_3/1", kind="ib", state="ACTIVE", phys_state="LinkUp", verdict="fail"
    )
    down = PortSnapshot(name="mlx5_3/1", kind="ib", state="DOWN", phys_state="Polling")
    training = PortSnapshot(name="mlx5_3/1", kind="ib", state="ACTIVE", phys_state="Polling")
    assert port_cell(back_up) == ("◐", "link-down")
    assert port_cell(down) == ("○", "link-down")
    assert port_cell(training) == ("○", "link-down")


def test_sla_markup_is_provisional_and_never_below_slo_when_unmeasured() -> None:
    snap = demo_snapshot(4)
    assert snap.sla is not None
    measured = sla_markup(snap.sla)
    assert "provisional · coverage" in measured
    # A tiered credit is a share of the month's whole bill: mid-month it is a projection.
    tiered = sla_markup(replace(snap.sla, credit_model="tiered"))
    assert "at month end if it stays here" in tiered and "owed so far" not in tiered
    pro_rata = sla_markup(replace(snap.sla, credit_model="pro_rata"))
    assert "owed so far" in pro_rata
    unmeasured = sla_markup(replace(snap.sla, availability_pct=None, coverage_pct=0.0))
    assert "not measured yet" in unmeasured
    assert "below SLO" not in unmeasured and "$sla-breach" not in unmeasured
