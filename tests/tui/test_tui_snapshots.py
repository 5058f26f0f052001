"""SVG snapshots of the dashboard (140x45, and 80x24 / 120x40 / 200x50 for the layout),
deterministic fleet."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from testkit.snapshots import connecting, demo_snapshot
from testkit.static_fleet import StaticFleet
from tui.app import GpuFleetApp, build_app
from tui.widgets.util_plot import UtilPlot

SIZE = (140, 45)
SnapCompare = Callable[..., bool]


def app_for(tmp_path: Path, theme: str) -> GpuFleetApp:
    fleet = StaticFleet([demo_snapshot(40)])
    return build_app(fleet, theme=theme, state_path=tmp_path / "state.json", refresh_s=0.0)


async def plotted(pilot: Pilot[Any]) -> None:
    """Until the utilization plot has its data (it loads after the first paint)."""
    plot = pilot.app.screen.query_one(UtilPlot)
    for _ in range(500):
        if plot.points:
            break
        await pilot.pause(0.01)
    assert plot.points, "the utilization plot never got its series"
    await pilot.pause()


def pressing(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run(pilot: Pilot[Any]) -> None:
        await plotted(pilot)
        await pilot.press(*keys)
        await pilot.pause()

    return run


def test_main_screen_dark(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = app_for(tmp_path, "gpufleet-dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=plotted)


def test_main_screen_light_sorted_by_health(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = app_for(tmp_path, "gpufleet-light")
    assert snap_compare(app, terminal_size=SIZE, run_before=pressing("s", "s"))


def test_main_screen_contrast_filtered(snap_compare: SnapCompare, tmp_path: Path) -> None:
    async def filter_broken(pilot: Pilot[Any]) -> None:
        await plotted(pilot)
        await pilot.press("slash")
        pilot.app.screen.query_one("#filter", Input).value = "state:broken|unreachable"
        await pilot.press("enter")
        await pilot.pause()

    app = app_for(tmp_path, "gpufleet-contrast")
    assert snap_compare(app, terminal_size=SIZE, run_before=filter_broken)


def test_node_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """Per-GPU telemetry, then the processes the node screen reads when it opens."""

    async def open_node(pilot: Pilot[Any]) -> None:
        await pressing("down", "down", "enter")(pilot)
        screen = pilot.app.screen
        for _ in range(500):
            if getattr(screen, "processes", None) is not None:
                break
            await pilot.pause(0.01)
        assert getattr(screen, "processes", None) is not None, "processes never read"
        await pilot.pause()

    app = app_for(tmp_path, "gpufleet-dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=open_node)


def test_export_dialog(snap_compare: SnapCompare, tmp_path: Path) -> None:
    async def open_export(pilot: Pilot[Any]) -> None:
        await plotted(pilot)
        await pilot.press("e")
        await pilot.pause()
        pilot.app.screen.query_one("#path", Input).value = "/data/gpufleet-node-1h.csv"
        await pilot.pause()

    app = app_for(tmp_path, "gpufleet-dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=open_export)


def test_help_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = app_for(tmp_path, "gpufleet-dark")
    assert snap_compare(app, terminal_size=SIZE, run_before=pressing("question_mark"))


async def settled(pilot: Pilot[Any]) -> None:
    await plotted(pilot)
    await pilot.pause()


def test_layout_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """Every node line keeps its status and all eight GPU cells; panels sit below."""
    app = app_for(tmp_path, "gpufleet-dark")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled)


def test_layout_120x40(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """A wide why column; the Failed GPUs panel lists every entry."""
    app = app_for(tmp_path, "gpufleet-dark")
    assert snap_compare(app, terminal_size=(120, 40), run_before=settled)


def test_layout_200x50(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = app_for(tmp_path, "gpufleet-dark")
    assert snap_compare(app, terminal_size=(200, 50), run_before=settled)


def test_first_screen_while_connecting(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """Connecting nodes are connecting (not broken); links are up on the reporting nodes
    only, never "all links up" while nodes have not reported."""
    snap = demo_snapshot(24, faults=False)
    nodes = tuple(connecting(n) if i >= 4 else n for i, n in enumerate(snap.nodes))
    fleet = StaticFleet([replace(snap, nodes=nodes)])
    app = build_app(fleet, theme="gpufleet-dark", state_path=tmp_path / "s.json", refresh_s=0.0)
    assert snap_compare(app, terminal_size=(120, 40), run_before=settled)


def test_map_mode_1200_nodes(snap_compare: SnapCompare, tmp_path: Path) -> None:
    fleet = StaticFleet([demo_snapshot(1200)])
    app = build_app(fleet, theme="gpufleet-dark", state_path=tmp_path / "s.json", refresh_s=0.0)
    assert snap_compare(app, terminal_size=(120, 40), run_before=pressing("m", "right", "down"))
