"""Gaps found walking issue #16 as a new operator (gpufleet demo under tmux)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.content import Content
from textual.widgets import Static

from fleet.facade import LogEntry
from testkit.snapshots import T0, demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import wait_for
from tui.app import build_app
from tui.log_view import entry_markup, kind_width
from tui.node_view import node_why
from tui.screens.help_screen import HelpScreen
from tui.widgets.header import Tile


def test_why_names_a_port_once_when_its_reasons_name_it() -> None:
    node = demo_snapshot(4, faults=False).nodes[0]
    port = replace(
        node.ports[1],
        verdict="warn",
        reasons=(f"{node.ports[1].name} symbol errors within the last 60 s",),
    )
    why = node_why(replace(node, ports=(node.ports[0], port, *node.ports[2:])))
    assert why == f"{port.name} symbol errors within the last 60 s"
    unnamed = replace(port, reasons=("rate 200 < 400 Gb/s",))
    why = node_why(replace(node, ports=(node.ports[0], unnamed, *node.ports[2:])))
    assert why == f"{port.name}: rate 200 < 400 Gb/s"


def test_event_log_lines_keep_one_column_for_long_kinds() -> None:
    entries = [
        LogEntry(T0 - 5, "node-005", "xid", "GPU 2: XID 48"),
        LogEntry(T0 - 4, "node-005", "repeat_offender", "GPU 2 failed again"),
        LogEntry(T0 - 3, "node-002", "link_downed", "mlx5_3/1 link_downed +1"),
    ]
    width = kind_width(entries)
    lines = [Content.from_markup(entry_markup(e, T0, kind_w=width)).plain for e in entries]
    starts = {line.index(e.text) for line, e in zip(lines, entries, strict=True)}
    assert len(starts) == 1, lines
    assert kind_width([entries[0]]) == 10  # short kinds keep the old column
    assert kind_width([LogEntry(T0, "n", "k" * 40, "x")]) == 16


@pytest.mark.parametrize(
    ("size", "shown"), [((120, 40), True), ((140, 45), True), ((80, 24), False)]
)
async def test_sla_tile_stays_in_sight_where_the_sla_panel_is_gone(
    tmp_path: Path, size: tuple[int, int], shown: bool
) -> None:
    snap = demo_snapshot(8)
    assert snap.sla is not None
    app = build_app(StaticFleet([snap]), state_path=tmp_path / "s.json")
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is not None)
        await pilot.pause()
        tile = app.main.query_one("#tile-sla", Tile)
        assert not app.main.query_one("#sla").display  # the panel has no room at these sizes
        assert tile.display is shown
        if shown:
            assert "MTD" in tile.text and tile.region.width > 0


async def test_help_lines_up_every_description(tmp_path: Path) -> None:
    app = build_app(StaticFleet([demo_snapshot(4)]), state_path=tmp_path / "s.json")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        text = str(app.screen.query_one(Static).content)
        plain = Content.from_markup(text).plain
        rows = [line for line in plain.splitlines() if line.startswith("  ") and line.strip()]
        for key in ("pagedown, ctrl+f", "double-click", "ctrl+p"):
            assert any(key in row for row in rows), key
        columns = {row.index(row.strip().split("  ", 1)[1]) for row in rows if "  " in row.strip()}
        assert len(columns) == 1, rows
