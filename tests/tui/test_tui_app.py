"""Pilot tests: the real app built by build_app over a deterministic StaticFleet."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from textual.command import CommandList, CommandPalette
from textual.widgets import Input, Select, Static

from fleet.model import NodeTransition
from testkit.snapshots import T0, demo_snapshot, lose_gpu, retick
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, read_text, toasts, wait_for
from tui.app import GpuFleetApp
from tui.screens.export_screen import ExportScreen
from tui.screens.help_screen import HelpScreen
from tui.screens.node_screen import NodeScreen
from tui.widgets.fleet_grid import FleetGrid
from tui.widgets.header import Tile
from tui.widgets.side_panels import FailedPanel
from tui.widgets.util_plot import UtilPlot

MakeApp = Callable[..., GpuFleetApp]


def grid_line(app: GpuFleetApp, name: str) -> str:
    """The text the grid draws for node ``name`` (it must be on screen)."""
    grid = app.main.query_one(FleetGrid)
    index = [n.name for n in grid.rows].index(name)
    return grid.render_line(index + 1 - int(grid.scroll_offset.y)).text


def palette_offers(app: GpuFleetApp, title: str) -> bool:
    """The command palette is open and its highlighted hit is ``title``."""
    if not isinstance(app.screen, CommandPalette):
        return False
    hits = app.screen.query_one(CommandList)
    option = hits.highlighted_option
    return option is not None and str(option.prompt).startswith(title)


def grid_colours(grid: FleetGrid) -> set[str]:
    """Foreground colours of the grid's first node line, as hex."""
    strip = grid.render_line(1)
    return {seg.style.color.triplet.hex for seg in strip if seg.style and seg.style.color
            and seg.style.color.triplet}  # fmt: skip


async def test_xid79_lost_gpu_shows_in_failed_panel_and_grid(make_app: MakeApp) -> None:
    healthy = demo_snapshot(16, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        panel = app.main.query_one(FailedPanel)
        await wait_for(pilot, lambda: app.main.snapshot is healthy)
        assert panel.rows == []
        assert "?" not in grid_line(app, "node-0004").split()[2]

        nodes = list(healthy.nodes)
        nodes[3] = lose_gpu(nodes[3], 3, T0 + 5)
        broken = retick(healthy, T0 + 5, seed=1).__class__(taken_at=T0 + 5, nodes=tuple(nodes))
        fleet.push(broken)
        await wait_for(pilot, lambda: bool(panel.rows))

        row = panel.rows[0]
        assert (row.node, row.index, row.verdict) == ("node-0004", 3, "lost")
        assert "XID 79" in str(panel.get_option_at_index(0).prompt)
        line = grid_line(app, "node-0004")
        assert "BROKEN" in line
        assert line.split()[2][3] == "?"  # the fourth GPU cell is the lost glyph


async def test_filter_and_sort_change_visible_nodes(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 16)
        box = app.main.query_one("#filter", Input)
        await pilot.press("slash")
        await wait_for(pilot, lambda: box.has_focus)
        await pilot.press(*"node", "minus", "left_square_bracket", *"0002", "minus", *"0004")
        await pilot.press("right_square_bracket", "enter")
        await wait_for(pilot, lambda: len(grid.rows) == 3 and grid.has_focus)
        assert [n.name for n in grid.rows] == ["node-0002", "node-0003", "node-0004"]

        box.value = "state:broken"
        await wait_for(pilot, lambda: grid.filter_text == "state:broken")
        await box.action_submit()
        assert {n.name for n in grid.rows} == {"node-0003", "node-0005", "node-0007"}

        # An invalid filter says why in words and keeps the filter applied before it, never
        # a half-typed prefix of the bad term ("state:" would match no node at all).
        box.value = "state:"
        await pilot.pause()
        box.value = "state:nonsense"
        await pilot.pause()
        assert box.has_class("-invalid") and "unknown state" in str(box.border_subtitle)
        assert "[" not in str(box.border_subtitle)  # no Python list repr
        assert {n.name for n in grid.rows} == {"node-0003", "node-0005", "node-0007"}
        await box.action_submit()
        await wait_for(pilot, lambda: any("Filter not applied" in t for t in toasts(app)))
        assert any("Still filtering by: state:broken" in t for t in toasts(app))

        await pilot.press("escape")  # clears the filter and returns to the grid
        await wait_for(pilot, lambda: len(grid.rows) == 16 and grid.has_focus)
        await pilot.press("s")
        assert grid.sort_key == "utilization"
        utils = [sum(g.util_gpu or 0 for g in n.gpus) / len(n.gpus) for n in grid.rows]
        assert [n.name for n in grid.rows] != sorted(n.name for n in grid.rows)
        assert utils[0] >= utils[-1]
        await pilot.press("s")
        assert grid.sort_key == "health"
        assert grid.rows[0].state == "unreachable" and grid.rows[1].state == "broken"
        assert grid.rows[-1].state == "up"


async def test_enter_opens_node_screen_with_event(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 16)
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        screen = app.screen
        assert isinstance(screen, NodeScreen) and screen.node_name == "node-0003"
        events = str(screen.query_one("#events", Static).content)
        assert "xid 79" in events and "XID 79: GPU has fallen off the bus" in events
        intervals = str(screen.query_one("#intervals", Static).content)
        assert "broken" in intervals and "GPU 5 lost" in intervals
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main)


async def test_export_writes_file_and_notifies_path(
    fleet: StaticFleet, make_app: MakeApp, tmp_path: Path
) -> None:
    app = make_app(fleet)
    target = tmp_path / "out" / "util.csv"
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        app.screen.query_one("#path", Input).value = str(target)
        await pilot.click("#export")
        await wait_for(pilot, lambda: any("Wrote" in t for t in toasts(app)))
        assert any(str(target) in t for t in toasts(app))
        assert read_text(target).splitlines()[0] == "ts,node,util_pct"
        request = fleet.exports[0]
        assert (request.path, request.level, request.format) == (target, "node", "csv")


async def test_export_failure_is_a_titled_notification(make_app: MakeApp) -> None:
    fleet = StaticFleet([demo_snapshot(4)], export_error=PermissionError("read-only disk"))
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        await pilot.click("#export")
        await wait_for(pilot, lambda: any("Export failed" in t for t in toasts(app)))
        assert any("read-only disk" in t for t in toasts(app))
        assert app.screen is app.main


async def test_theme_switch_changes_theme_and_persists(
    fleet: StaticFleet, make_app: MakeApp, state_path: Path
) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        assert app.theme == "gpufleet-dark"
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: bool(grid.rows))
        assert "#57ab5a" in grid_colours(grid)  # gpu-ok of the dark theme
        await pilot.press("t")
        assert app.theme == "gpufleet-light"
        assert app.theme_variables["gpu-failed"] == "#C4231C"
        await wait_for(pilot, lambda: "#1a7f37" in grid_colours(grid))  # redrawn in light
        assert "#57ab5a" not in grid_colours(grid)
        await wait_for(pilot, lambda: state_path.exists())
        assert '"gpufleet-light"' in read_text(state_path)

    again = make_app(fleet)
    async with again.run_test(size=SIZE, notifications=True):
        assert again.theme == "gpufleet-light"
    explicit = make_app(fleet, theme="gpufleet-contrast")
    async with explicit.run_test(size=SIZE, notifications=True):
        assert explicit.theme == "gpufleet-contrast"


async def test_unknown_theme_falls_back_with_a_warning(
    fleet: StaticFleet, make_app: MakeApp
) -> None:
    app = make_app(fleet, theme="solarized-neon")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        assert app.theme == "gpufleet-dark"
        await wait_for(pilot, lambda: any("solarized-neon" in t for t in toasts(app)))


async def test_help_lists_every_key(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert isinstance(app.screen, HelpScreen)
        keys = {key for _, key, _ in app.screen.rows}
        assert {"/", "s", "w", "enter", "esc", "e", "t", "?", "q", "ctrl+p"} <= keys


async def test_palette_opens_a_node(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.shown is not None)
        await pilot.press("ctrl+p")
        await pilot.press(*"open node node-0007")
        await wait_for(pilot, lambda: palette_offers(app, "Open node node-0007"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "node-0007"


async def test_facade_errors_are_notifications(make_app: MakeApp) -> None:
    fleet = StaticFleet([demo_snapshot(4)], series_error=RuntimeError("history offline"))
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: any("history offline" in t for t in toasts(app)))
        assert any("Utilization history" in t for t in toasts(app))
        await pilot.press("enter")  # node screen: sparklines fail too, the view still opens
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        await wait_for(pilot, lambda: any("GPU history" in t for t in toasts(app)))


async def test_read_only_hides_node_actions(make_app: MakeApp) -> None:
    fleet = StaticFleet([demo_snapshot(4)], read_only=True)
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True):
        assert app.read_only and app.sub_title == "read-only"
        assert "read-only" in str(app.main.query_one("#left").border_subtitle)
        assert app.check_action("probe", ()) is False
        assert app.check_action("export", ()) is True


async def test_flood_of_snapshots_collapses_to_newest(make_app: MakeApp) -> None:
    first = demo_snapshot(8)
    fleet = StaticFleet([first])
    app = make_app(fleet, refresh_s=0.2)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is first)
        ticks = [retick(first, T0 + k, seed=k) for k in range(1, 6)]
        for tick in ticks:
            fleet.push(tick)
        await wait_for(pilot, lambda: app.main.snapshot is ticks[-1])
        assert app.shown is ticks[-1]


async def test_tick_redraws_only_changed_nodes(make_app: MakeApp) -> None:
    first = demo_snapshot(8)
    fleet = StaticFleet([first])
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: id(first.nodes[0]) in grid._strips)
        before = grid._strips[id(first.nodes[0])][1]
        changed = lose_gpu(first.nodes[1], 0, T0 + 1)
        nodes = (first.nodes[0], changed, *first.nodes[2:])
        fleet.push(first.__class__(taken_at=T0 + 1, nodes=nodes))
        await wait_for(pilot, lambda: grid.rows[1] is changed)
        await pilot.pause()
        assert grid._strips[id(first.nodes[0])][1] is before
        assert "?" in grid_line(app, "node-0002")


async def test_selecting_a_failed_gpu_opens_its_node(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        panel = app.main.query_one(FailedPanel)
        await wait_for(pilot, lambda: len(panel.rows) == 2)
        panel.focus()
        await pilot.press("down", "enter")  # the second entry: node-0007's ECC failure
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "node-0007"


async def test_window_key_cycles_the_plot_window(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        plot = app.main.query_one(UtilPlot)
        await wait_for(pilot, lambda: plot.window_s == 86_400 and len(plot.points) == 1440)
        await pilot.press("w")
        await wait_for(pilot, lambda: plot.window_s == 604_800)
        assert "7 d window" in str(plot.border_title)
        await pilot.press("w")
        await wait_for(pilot, lambda: plot.window_s == 3_600 and len(plot.points) == 60)


async def test_node_screen_records_broken_intervals_it_sees(make_app: MakeApp) -> None:
    healthy = demo_snapshot(4, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        screen = app.screen
        assert isinstance(screen, NodeScreen)
        intervals = screen.query_one("#intervals", Static)
        assert "none seen" in str(intervals.content)

        broken_node = lose_gpu(healthy.nodes[0], 2, T0 + 60)
        went = NodeTransition("node-0001", "broken", T0 + 60, ("GPU 2 lost (XID 79)",))
        nodes = (broken_node, *healthy.nodes[1:])
        fleet.push(replace(healthy, taken_at=T0 + 60, nodes=nodes, transitions=(went,)))
        await wait_for(pilot, lambda: "→ now" in str(intervals.content))
        back = NodeTransition("node-0001", "up", T0 + 660)
        # Up again since then: the node's state_since is when its interval ends.
        again = (replace(healthy.nodes[0], state_since=T0 + 660), *healthy.nodes[1:])
        fleet.push(replace(healthy, taken_at=T0 + 660, nodes=again, transitions=(back,)))
        await wait_for(pilot, lambda: "→ now" not in str(intervals.content))
        assert "(10m)" in str(intervals.content) and "GPU 2 lost" in str(intervals.content)


async def test_snapshots_from_another_thread_arrive(make_app: MakeApp) -> None:
    first = demo_snapshot(4)
    fleet = StaticFleet([first])
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is first)
        tick = retick(first, T0 + 1, seed=3)
        worker = threading.Thread(target=fleet.push, args=(tick,))
        worker.start()
        worker.join()
        await wait_for(pilot, lambda: app.main.snapshot is tick)
        assert fleet.subscribers == 1
    assert fleet.subscribers == 0  # the app unsubscribed when it closed


async def test_startup_before_and_while_the_fleet_connects(make_app: MakeApp) -> None:
    fleet = StaticFleet()  # no snapshot yet
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        tile = app.main.query_one("#tile-nodes", Tile)
        plot = app.main.query_one(UtilPlot)
        await wait_for(pilot, lambda: "collecting utilization history" in plot.waiting)
        assert tile.text.startswith("waiting for the first snapshot")

        ready = demo_snapshot(8, faults=False)
        connecting = replace(
            ready, nodes=tuple(replace(n, status="connecting") for n in ready.nodes[:5])
            + ready.nodes[5:]
        )  # fmt: skip
        fleet.push(connecting)
        await wait_for(pilot, lambda: "5 connecting" in tile.text)
        assert tile.has_class("-connecting") and "3[/]/8 streaming" in tile.text
        fleet.push(ready)
        await wait_for(pilot, lambda: "8[/]/8 streaming" in tile.text)
        assert not tile.has_class("-connecting")


async def test_palette_runs_dashboard_actions(fleet: StaticFleet, make_app: MakeApp) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 16)
        await pilot.press("ctrl+p", *"sort nodes")
        await wait_for(pilot, lambda: palette_offers(app, "Sort nodes"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: grid.sort_key == "utilization")
        await pilot.press("ctrl+p", *"next theme")
        await wait_for(pilot, lambda: palette_offers(app, "Next theme"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "gpufleet-light")


async def test_export_from_a_date(fleet: StaticFleet, make_app: MakeApp, tmp_path: Path) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        screen = app.screen
        screen.query_one("#since", Select).value = "date"
        screen.query_one("#level", Select).value = "gpu"
        screen.query_one("#path", Input).value = str(tmp_path / "gpus.csv")
        await pilot.click("#export")  # no first day yet: the dialog stays and says why
        await pilot.pause()
        since_box = screen.query_one("#since-date", Input)
        assert app.screen is screen and since_box.has_class("-invalid")
        since_box.value = "2026-11-01"
        since_box.focus()
        await pilot.press("enter")  # enter in any field submits
        await wait_for(pilot, lambda: bool(fleet.exports))
        request = fleet.exports[0]
        assert (request.since, request.until, request.level) == ("2026-11-01", None, "gpu")
