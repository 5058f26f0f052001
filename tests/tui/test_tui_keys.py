"""Pilot tests of the operator's habits: sizes, vim keys, map, sort clicks, palette, export,
theme and the probe confirmation on a busy node."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from textual.command import CommandList, CommandPalette
from textual.widgets import Input, Select, Static

from testkit.snapshots import demo_snapshot, probe_flag
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import read_text, toasts, wait_for
from tui.app import GpuFleetApp
from tui.grid_rows import header_cells
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.export_screen import ExportScreen
from tui.screens.node_screen import NodeScreen
from tui.screens.probe_screen import ProbeScreen
from tui.widgets.fleet_grid import FleetGrid
from tui.widgets.side_panels import FailedPanel

MakeApp = Callable[..., GpuFleetApp]


def grid_of(app: GpuFleetApp) -> FleetGrid:
    return app.main.query_one(FleetGrid)


async def test_at_80x24_panels_move_below_and_every_line_keeps_all_gpus(
    fleet: StaticFleet, make_app: MakeApp
) -> None:
    app = make_app(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        grid = grid_of(app)
        await wait_for(pilot, lambda: len(grid.rows) == 16 and grid.size.height > 2)
        assert app.main.has_class("-narrow") and app.main.has_class("-no-plot")
        assert grid.size.width >= 76  # the grid has the whole width
        visible = min(len(grid.rows), grid.size.height - 1)
        for y in range(1, visible + 1):
            line = grid.render_line(y).text.replace("▸", " ")
            assert len(line.split()[2]) == 8, line  # status, then all eight GPU cells
        lost = grid.render_line(3).text
        assert "BROKEN" in lost and lost.split()[2][5] == "?" and "GPU 5" in lost
        await pilot.resize_terminal(200, 50)
        await wait_for(pilot, lambda: not app.main.has_class("-narrow"))


async def test_at_120x40_failed_gpus_shows_every_entry(make_app: MakeApp) -> None:
    snap = demo_snapshot(16)
    nodes = [probe_flag(n, 7, "straggler") if n.name == "node-0006" else n for n in snap.nodes]
    fleet = StaticFleet([replace(snap, nodes=tuple(nodes))])
    app = make_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.main.query_one(FailedPanel)
        await wait_for(pilot, lambda: len(panel.rows) == 3 and panel.size.height > 0)
        assert panel.max_scroll_y == 0  # all three fit, none hidden below
        grid = grid_of(app)
        assert grid._layout.why_w >= 40


async def test_vim_keys_and_the_map(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        grid = grid_of(app)
        await wait_for(pilot, lambda: len(grid.rows) == 16)
        await pilot.press("j", "j")
        assert grid.cursor == 2
        await pilot.press("k")
        assert grid.cursor == 1
        await pilot.press("G")
        assert grid.cursor == 15
        await pilot.press("g")
        assert grid.cursor == 0
        await pilot.press("m")
        await wait_for(pilot, lambda: grid.map_mode)
        assert grid.map_columns >= 16  # sixteen nodes fit on one line of the map
        await pilot.press("right", "right", "right")
        assert grid.cursor == 3
        assert grid.render_line(0).text.startswith("node-0004 up")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "node-0004"


async def test_clicking_a_column_title_sorts_and_reverses(
    fleet: StaticFleet, make_app: MakeApp
) -> None:
    app = make_app(fleet)
    async with app.run_test(size=(200, 50)) as pilot:
        grid = grid_of(app)
        await wait_for(pilot, lambda: len(grid.rows) == 16)
        header = header_cells(grid._layout)[0][0]
        x = header.index("mem")
        await pilot.click(FleetGrid, offset=(x, 0))
        await wait_for(pilot, lambda: grid.sort_key == "memory")
        first = grid.rows[0]
        assert "mem▼" in grid.render_line(0).text
        await pilot.click(FleetGrid, offset=(x, 0))
        await wait_for(pilot, lambda: grid.sort_reverse)
        assert grid.rows[0] is not first and "mem▲" in grid.render_line(0).text
        assert "▲" in str(app.main.query_one("#left").border_title)
        await pilot.press("s")  # the next sort key, in its natural order
        assert grid.sort_key == "power" and not grid.sort_reverse
        await pilot.press("r")
        assert grid.sort_reverse


def palette_titles(app: GpuFleetApp) -> list[str]:
    assert isinstance(app.screen, CommandPalette)
    hits = app.screen.query_one(CommandList)
    return [str(hits.get_option_at_index(i).prompt) for i in range(hits.option_count)]


async def test_palette_lists_every_action_once_and_only_our_themes(
    fleet: StaticFleet, make_app: MakeApp
) -> None:
    app = make_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+p")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, CommandPalette)
                and app.screen.query_one(CommandList).option_count > 10
            ),
        )
        titles = [t.splitlines()[0] for t in palette_titles(app)]
        assert len(titles) == len(set(titles)), titles
        for wanted in ("Keys", "Quit", "Probe node", "Probe suspects", "Map of the fleet"):
            assert titles.count(wanted) == 1, wanted
        themes = [t for t in titles if "theme" in t.lower() and t != "Next theme"]
        assert themes and all("gpufleet-" in t for t in themes), themes
        assert not any("Screenshot" in t for t in titles)


async def test_read_only_palette_has_no_probe(make_app: MakeApp) -> None:
    app = make_app(StaticFleet([demo_snapshot(4)], read_only=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("p")
        await pilot.press("ctrl+p")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, CommandPalette)
                and app.screen.query_one(CommandList).option_count > 5
            ),
        )
        titles = [t.splitlines()[0] for t in palette_titles(app)]
        assert "Probe node" not in titles and "Probe suspects" not in titles


async def test_theme_change_is_announced(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.press("t")
        await wait_for(pilot, lambda: any("Theme: gpufleet-light" in t for t in toasts(app)))


async def test_export_path_follows_format_and_never_overwrites_unasked(
    fleet: StaticFleet, make_app: MakeApp, tmp_path: Path
) -> None:
    app = make_app(fleet)
    earlier = tmp_path / "util.csv"
    earlier.write_text("earlier,export\n", encoding="utf-8")
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        dialog = app.screen
        path = dialog.query_one("#path", Input)
        fmt = dialog.query_one("#format", Select)
        path.value = str(earlier)
        await pilot.pause()
        fmt.value = "parquet"
        await wait_for(pilot, lambda: path.value == str(tmp_path / "util.parquet"))
        path.value = str(tmp_path / "util.json")
        await wait_for(pilot, lambda: fmt.value == "json")
        path.value = str(earlier)  # back to the existing CSV: the format follows
        await wait_for(pilot, lambda: fmt.value == "csv")
        await pilot.click("#export")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one("#question", Static).content)
        assert str(earlier) in question and "Overwrite" in question
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is dialog)
        assert fleet.exports == [] and read_text(earlier) == "earlier,export\n"
        await pilot.click("#export")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: any("Wrote" in t for t in toasts(app)))
        assert fleet.exports[0].format == "csv" and fleet.exports[0].path == earlier


async def test_probe_on_a_busy_node_asks_first_naming_load_and_memory(
    fleet: StaticFleet, make_app: MakeApp
) -> None:
    app = make_app(fleet)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        grid = grid_of(app)
        await wait_for(pilot, lambda: len(grid.rows) == 16)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        question = str(app.screen.query_one("#question", Static).content)
        assert "node-0001 is busy" in question and "mean GPU utilization" in question
        assert "GiB GPU memory in use" in question
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.main)
        assert not any(isinstance(s, ProbeScreen) for s in app.screen_stack)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ProbeScreen))


async def test_probe_on_an_idle_node_starts_at_once(make_app: MakeApp) -> None:
    snap = demo_snapshot(2, faults=False)
    idle_gpus = tuple(replace(g, util_gpu=0.0, mem_used_bytes=0) for g in snap.nodes[0].gpus)
    idle = replace(snap.nodes[0], gpus=idle_gpus)
    app = make_app(StaticFleet([replace(snap, nodes=(idle, snap.nodes[1]))]))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: len(grid_of(app).rows) == 2)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, ProbeScreen))


async def test_ssh_without_a_target_says_so(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: len(grid_of(app).rows) == 16)
        await pilot.press("S")
        await wait_for(pilot, lambda: any("No SSH target" in t for t in toasts(app)))


async def test_ssh_that_cannot_suspend_names_the_command(make_app: MakeApp) -> None:
    class Reachable(StaticFleet):
        def ssh_argv(self, node: str) -> list[str] | None:
            return ["ssh", "-p", "2222", "--", f"{node}.example"]

    app = make_app(Reachable([demo_snapshot(2)]))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await wait_for(pilot, lambda: len(grid_of(app).rows) == 2)
        await pilot.press("S")  # a headless test app cannot hand the terminal over
        await wait_for(pilot, lambda: any("ssh -p 2222 -- node-0001.example" in t
                                          for t in toasts(app)))  # fmt: skip
