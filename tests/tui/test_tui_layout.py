"""Pure layout and wording of the grid, header and panels: any width, truthful first screen."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fleet.facade import NodeSnapshot
from testkit.snapshots import T0, connecting, demo_snapshot, probe_flag
from testkit.static_fleet import StaticFleet
from tui.draw import GLYPH_FAIL, GLYPH_WARN
from tui.grid_rows import WHY_MIN, column_at, ellipsize, header_cells, layout_for, node_cells
from tui.header_view import header_tiles
from tui.map_view import map_cell, map_header
from tui.node_view import SummaryCache, node_why, parse_filter, sort_nodes, summarize
from tui.panels import NO_LINK_DATA, failed_gpu_markup, failed_gpus, links_reported
from tui.widgets.util_plot import shown_span, time_axis


def line_text(node_name: str, width: int, nodes: int = 16) -> str:
    snap = demo_snapshot(nodes)
    node = snap.node(node_name)
    assert node is not None
    return "".join(t for t, _ in node_cells(node, summarize(node), layout_for(snap.nodes, width)))


@pytest.mark.parametrize("width", [78, 118, 198])
def test_every_width_shows_status_and_all_eight_gpu_cells(width: int) -> None:
    text = line_text("node-0003", width)
    assert len(text) <= width
    assert "BROKEN" in text
    cells = text.split()[2]
    assert len(cells) == 8 and cells[5] == "?"  # the lost GPU 5 is visible at every width


def test_figure_columns_drop_before_the_why_column_gets_too_narrow() -> None:
    snap = demo_snapshot(16)
    narrow, wide = layout_for(snap.nodes, 78), layout_for(snap.nodes, 198)
    assert narrow.why_w >= WHY_MIN and "power" not in narrow.figures
    assert wide.figures == ("util", "mem", "temp", "ports", "power")
    assert wide.why_w >= 40


def test_cut_text_ends_in_an_ellipsis() -> None:
    assert ellipsize("GPU 5 lost (XID 79)", 10) == "GPU 5 los…"
    assert ellipsize("short", 10) == "short"
    text = line_text("node-0009", 78)
    assert text.endswith("…")


def test_memory_column_and_sort_indicator() -> None:
    snap = demo_snapshot(16)
    layout = layout_for(snap.nodes, 198)
    header = header_cells(layout, "memory", reverse=False)[0][0]
    assert "mem▼" in header and "node▲" not in header
    assert "node▼" in header_cells(layout, "name", reverse=True)[0][0]
    node = snap.nodes[0]
    used = sum(g.mem_used_bytes or 0 for g in node.gpus)
    total = sum(g.memory_total_bytes or 0 for g in node.gpus)
    assert f"{100 * used / total:.0f}%" in line_text(node.name, 198)
    # The title sits over its column: a click there sorts by it.
    assert column_at(layout, header.index("mem")) == "memory"
    assert column_at(layout, header.index("temp")) == "temp"
    assert column_at(layout, 3) == "name"


def test_sort_by_memory_and_reverse() -> None:
    snap = demo_snapshot(16)
    cache = SummaryCache()
    cache.refresh()
    down = sort_nodes(snap.nodes, "memory", cache)
    up = sort_nodes(snap.nodes, "memory", cache, reverse=True)
    assert down[-1].name == up[-1].name == "node-0012"  # unreachable: N/A, last either way
    known_down = [cache.get(n).mem_pct for n in down[:-1]]
    assert known_down == sorted(known_down, reverse=True)  # type: ignore[type-var]
    assert [cache.get(n).mem_pct for n in up[:-1]] == known_down[::-1]
    names = [n.name for n in sort_nodes(snap.nodes, "name", cache, reverse=True)]
    assert names[0] == "node-0016" and names[-1] == "node-0001"


def test_why_is_given_for_every_node_that_is_not_plainly_up() -> None:
    snap = demo_snapshot(16)
    for node in snap.nodes:
        s = summarize(node)
        if node.state != "up" or s.has_warn:
            assert node_why(node), node.name
    thermal, nvlink = snap.node("node-0011"), snap.node("node-0014")
    assert thermal is not None and nvlink is not None
    assert "GPU 6: HW thermal slowdown" in node_why(thermal)
    assert "GPU 1: NVLink CRC" in node_why(nvlink)
    lost = snap.node("node-0003")
    assert lost is not None and node_why(lost).count("GPU 5") == 1  # named once


def names(text: str, nodes: int = 16) -> list[str]:
    snap = demo_snapshot(nodes)
    flagged = [probe_flag(n, 7, "straggler") if n.name == "node-0006" else n for n in snap.nodes]
    pred = parse_filter(text)
    return [n.name for n in flagged if pred(n, summarize(n))]


def test_filter_terms_for_reasons_gpus_and_probes() -> None:
    assert names("why:xid") == ["node-0003"]
    assert names("why:thermal") == ["node-0011"]
    assert names("gpu:5") == ["node-0003"]  # lost
    assert names("gpu:7") == ["node-0006"]  # flagged by the probe
    assert names("probe:straggler") == ["node-0006"]
    assert names("probe:any") == ["node-0006"]
    assert names("probe:fail") == []


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("state:exploded", "unknown state exploded in state:exploded; use broken|"),
        ("probe:meh", "unknown probe meh"),
        ("gpu:x", "gpu: takes a GPU index"),
        ("why:", "why: needs some text"),
        ("colour:red", "unknown filter term colour:red"),
    ],
)
def test_invalid_filters_say_why_in_words(text: str, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_filter(text)
    message = str(caught.value)
    assert said in message and "['" not in message


def test_connecting_nodes_are_counted_apart_never_broken() -> None:
    snap = demo_snapshot(16, faults=False)
    fleet = tuple(connecting(n) if i < 14 else n for i, n in enumerate(snap.nodes))
    tiles = header_tiles(replace(snap, nodes=fleet))
    assert "0[/] broken" in tiles.broken and not tiles.any_broken
    assert "14 connecting" in tiles.nodes and "14 not yet seen" in tiles.broken
    assert "16[/]/128 healthy" in tiles.gpus and "112 not yet seen" in tiles.gpus
    assert not tiles.gpus_degraded
    node = fleet[0]
    text = "".join(t for t, _ in node_cells(node, summarize(node), layout_for(fleet, 198)))
    assert "connecting" in text and "unreachable" not in text and "BROKEN" not in text
    assert names_in(fleet, "state:unreachable") == []
    assert len(names_in(fleet, "state:connecting")) == 14


def names_in(nodes: tuple[NodeSnapshot, ...], text: str) -> list[str]:
    pred = parse_filter(text)
    return [n.name for n in nodes if pred(n, summarize(n))]


def test_a_connected_node_waiting_for_its_first_sample_is_still_connecting() -> None:
    node = replace(connecting(demo_snapshot(1).nodes[0]), status="stale", status_reason="")
    assert "waiting for the agent's first sample" in node_why(node)
    refused = replace(node, status="unreachable", status_reason="connection refused")
    assert "unreachable" in "".join(t for t, _ in node_cells(refused, summarize(refused),
                                                              layout_for([refused])))  # fmt: skip


def test_links_panel_says_no_data_until_a_node_reports() -> None:
    snap = demo_snapshot(4, faults=False)
    none_yet = replace(snap, nodes=tuple(connecting(n) for n in snap.nodes))
    assert not links_reported(none_yet) and links_reported(snap)
    assert "no data yet" in NO_LINK_DATA


def test_probe_findings_mark_the_gpu_in_grid_panel_and_header() -> None:
    snap = demo_snapshot(16, faults=False)
    node = probe_flag(snap.nodes[5], 7, "slow")
    fleet = replace(snap, nodes=(*snap.nodes[:5], node, *snap.nodes[6:]))
    cells = node_cells(node, summarize(node), layout_for(fleet.nodes))
    gpu_cells = [c for c in cells if len(c[0]) == 1][:8]
    assert gpu_cells[7] == (GLYPH_WARN, "gpu-warn")
    assert "GPU 7: probe: slow" in node_why(node)
    rows = failed_gpus(fleet)
    assert [(r.node, r.index, r.probe) for r in rows] == [("node-0006", 7, "slow")]
    assert "SLOW" in failed_gpu_markup(rows[0], T0) and "probe: slow" in failed_gpu_markup(rows[0])
    tiles = header_tiles(fleet)
    assert "1 flagged by probe" in tiles.gpus and tiles.gpus_degraded
    failed = probe_flag(snap.nodes[5], 7, "fail")
    assert [c for c in node_cells(failed, summarize(failed), layout_for([failed]))
            if len(c[0]) == 1][7] == (GLYPH_FAIL, "gpu-failed")  # fmt: skip
    cleared = probe_flag(node, 7, "pass")
    assert failed_gpus(replace(fleet, nodes=(cleared,))) == []


def test_failed_panel_line_says_how_long_ago() -> None:
    rows = failed_gpus(demo_snapshot(16))
    text = failed_gpu_markup(rows[0], T0)
    assert "30m ago" in text and "\n" not in text


def test_map_cells_and_header() -> None:
    snap = demo_snapshot(16)
    by_name = {n.name: n for n in snap.nodes}
    glyphs = {name: map_cell(n, summarize(n)) for name, n in by_name.items()}
    assert glyphs["node-0003"] == ("✗", "gpu-failed")
    assert glyphs["node-0012"] == ("?", "gpu-lost")
    assert glyphs["node-0011"] == ("!", "gpu-warn")
    assert map_cell(connecting(snap.nodes[0]), summarize(snap.nodes[0]))[1] == "gpu-unknown"
    head = "".join(t for t, _ in map_header(by_name["node-0003"], 16, 60))
    assert head.startswith("node-0003 BROKEN") and len(head) <= 60


def test_plot_axis_fits_the_history_that_exists() -> None:
    snap = demo_snapshot(4)
    points = list(StaticFleet([snap]).utilization_series(86_400))[-12:]
    assert shown_span(points, 86_400) == 720.0  # twelve minutes, not 24 hours
    xs, label = time_axis(points, 86_400)
    assert label == "minutes ago" and xs[0] == -11.0
    assert shown_span([], 86_400) == 600.0
    full = list(StaticFleet([snap]).utilization_series(3_600))
    assert shown_span(full, 3_600) == 3_600
