"""The node screen's process table over a simulated node on loopback SSH (real agent)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.runtime.waits import wait_for_snapshot
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import build_app
from tui.screens.node_screen import NodeScreen
from tui.widgets.fleet_grid import FleetGrid


async def test_the_node_screen_lists_the_processes_the_agent_found(
    sim_runtime: tuple[FleetRuntime, LoopbackFleet], tmp_path: Path
) -> None:
    runtime, _ = sim_runtime
    # Opened before the agent is on the node, the screen says so and asks again later;
    # here the agent streams first, so the first read finds the job.
    await wait_for_snapshot(runtime, lambda s: s.nodes[0].status == "streaming", 60)
    app = build_app(runtime, state_path=tmp_path / "ui.json", refresh_s=0.2)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 3 and grid.cursor_node is not None, 30)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        screen = app.screen
        assert isinstance(screen, NodeScreen)
        await wait_for(pilot, lambda: screen.processes is not None, 60)
        listing = screen.processes
        assert listing is not None and listing.error is None, listing
        assert listing.processes, "the simulated node runs a job"
        table = screen.query_one("#processes", DataTable)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        expected = sorted((str(p.pid), str(p.gpu)) for p in listing.processes)
        assert sorted((row[0], row[2]) for row in rows) == expected
        assert all(row[4].startswith("python3 -m ") for row in rows)
        assert f"{len({p.pid for p in listing.processes})} on" in str(table.border_title)
