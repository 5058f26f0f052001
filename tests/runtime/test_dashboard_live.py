"""The dashboard built by the CLI's factory over a simulated fleet on loopback SSH."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import build_app
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.node_screen import NodeScreen
from tui.screens.probe_screen import ProbeScreen
from tui.widgets.fleet_grid import FleetGrid
from tui.widgets.side_panels import FailedPanel


def grid_line(app: object, name: str) -> str:
    grid = app.main.query_one(FleetGrid)  # type: ignore[attr-defined]
    index = [n.name for n in grid.rows].index(name)
    return str(grid.render_line(index + 1 - int(grid.scroll_offset.y)).text)


async def test_xid79_on_a_simulated_node_reaches_the_failed_panel_and_grid(
    sim_runtime: tuple[FleetRuntime, LoopbackFleet], tmp_path: Path
) -> None:
    runtime, _ = sim_runtime
    app = build_app(runtime, state_path=tmp_path / "ui.json", refresh_s=0.2)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        panel = app.main.query_one(FailedPanel)
        # The XID can arrive a tick before the sample that finds the GPU gone (verdict
        # fail, then lost): wait for the settled state.
        await wait_for(
            pilot,
            lambda: any((r.node, r.verdict) == ("node-002", "lost") for r in panel.rows),
            30,
        )
        row = next(r for r in panel.rows if r.node == "node-002")
        assert (row.index, row.verdict) == (3, "lost")
        line = grid_line(app, "node-002")
        assert "BROKEN" in line and line.split()[2][3] == "?"

        grid = app.main.query_one(FleetGrid)
        # The keys act on the grid as it is when they land: wait for its cursor first, and
        # for it to reach node-002 before opening (under load "down" ran ahead of the grid).
        await wait_for(pilot, lambda: len(grid.rows) == 3 and grid.cursor_node is not None, 30)
        await pilot.press("down")
        await wait_for(pilot, lambda: (c := grid.cursor_node) is not None and c.name == "node-002")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == "node-002"
        await wait_for(
            pilot, lambda: "XID 79" in str(app.screen.query_one("#events", Static).content), 30
        )


async def test_p_probes_the_node_under_the_cursor_and_the_node_screen_keeps_the_report(
    sim_runtime: tuple[FleetRuntime, LoopbackFleet], tmp_path: Path
) -> None:
    runtime, _ = sim_runtime
    app = build_app(runtime, state_path=tmp_path / "ui.json", refresh_s=0.2)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 3 and grid.cursor_node is not None, 30)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        assert "press p" in str(app.screen.query_one("#probe-results", Static).content)
        await pilot.press("p")
        # A busy simulated node asks first, naming its load (the workload decides).
        await wait_for(pilot, lambda: isinstance(app.screen, ProbeScreen | ConfirmScreen))
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ProbeScreen))
        probe = app.screen
        assert isinstance(probe, ProbeScreen) and probe.node == "node-001"
        await wait_for(pilot, lambda: probe.report is not None and not probe.running, 60)
        assert probe.report is not None and probe.report.status == "ok"
        table = str(probe.query_one("#probe-table", Static).content)
        assert "gemm" in table and "pass" in table
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        results = str(app.screen.query_one("#probe-results", Static).content)
        assert "quick" in results and "gemm" in results


async def test_read_only_dashboard_refuses_probes(
    sim_runtime: tuple[FleetRuntime, LoopbackFleet], tmp_path: Path
) -> None:
    runtime, _ = sim_runtime
    runtime.read_only = True
    app = build_app(runtime, state_path=tmp_path / "ui.json")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("p")
        await pilot.pause()
        assert not isinstance(app.screen, ProbeScreen)
    assert runtime.prober.report("node-001") is None
