"""`S` on the demo: simulated nodes have no shell, and the dashboard says so at once."""

from __future__ import annotations

from pathlib import Path

from collectors.demo import start_demo_fleet
from gpufleet.commands.demo import demo_config, demo_contract, demo_runtime
from tests.tui.pilot_helpers import SIZE, toasts, wait_for
from tui.app import build_app
from tui.widgets.fleet_grid import FleetGrid


async def test_s_on_a_simulated_node_says_it_has_no_shell_and_runs_nothing(
    tmp_path: Path,
) -> None:
    quiet = tmp_path / "no-faults.toml"
    quiet.write_text("", encoding="utf-8")
    demo = await start_demo_fleet(1, 2, quiet, 0)
    runtime = demo_runtime(demo_config(demo_contract(1, 2)), demo, tmp_path)
    app = build_app(runtime, state_path=tmp_path / "ui.json", refresh_s=0.2)
    try:
        await runtime.start()
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            grid = app.main.query_one(FleetGrid)
            await wait_for(pilot, lambda: grid.cursor_node is not None, 30)
            await pilot.press("S")
            await wait_for(pilot, lambda: any("have no shell" in t for t in toasts(app)))
            assert not app.in_ssh  # nothing was started and the screen never left
    finally:
        await runtime.stop()
        await demo.stop()
