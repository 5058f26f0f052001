"""The running fleet offers the dashboard its delivery panel and dev: filter from
[contract], judged on the simulated nodes' own readings (their driver is 570.124.06)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import Input

from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.tui.pilot_helpers import filtered, wait_for
from tests.tui.test_tui_delivery_campaign import WIDE
from tui.app import build_app
from tui.widgets.delivery_panel import DeliveryPanel
from tui.widgets.fleet_grid import FleetGrid

FLEET = {"hosts": ["node-[001-002]"], "interval": 0.5, "slow_interval": 1.0}
# The simulated driver is below this range: every node deviates, and only on driver.
CONTRACT = {"gpus_per_node": 8, "driver_min": "575", "gpu_hour_price": "2.50"}


async def running(tmp_path: Path, raw: dict[str, object]) -> AsyncIterator[FleetRuntime]:
    async with LoopbackFleet(nodes=2, gpus=8, seed=3) as lf:
        runtime = FleetRuntime(
            parse_config(raw), lf.targets(interval=0.5, slow_interval=1.0), data_dir=tmp_path
        )
        await runtime.start()
        try:
            yield runtime
        finally:
            await runtime.stop()


@pytest.fixture
async def contracted(tmp_path: Path) -> AsyncIterator[FleetRuntime]:
    async for runtime in running(tmp_path, {"fleet": FLEET, "contract": CONTRACT}):
        yield runtime


@pytest.fixture
async def uncontracted(tmp_path: Path) -> AsyncIterator[FleetRuntime]:
    async for runtime in running(tmp_path, {"fleet": FLEET}):
        yield runtime


async def test_the_panel_and_dev_filter_judge_the_live_fleet(
    contracted: FleetRuntime, tmp_path: Path
) -> None:
    app = build_app(contracted, state_path=tmp_path / "ui.json", refresh_s=0.2)
    async with app.run_test(size=WIDE) as pilot:
        panel = app.main.query_one(DeliveryPanel)
        await wait_for(pilot, lambda: "node-002: driver 570.124.06" in str(panel.render()), 30)
        assert panel.display
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 2, 30)
        assert await filtered(app, pilot, "dev:driver") == ["node-001", "node-002"]
        assert await filtered(app, pilot, "dev:power") == []


async def test_without_a_contract_the_panel_is_hidden_and_dev_says_why(
    uncontracted: FleetRuntime, tmp_path: Path
) -> None:
    app = build_app(uncontracted, state_path=tmp_path / "ui.json", refresh_s=0.2)
    async with app.run_test(size=WIDE) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 2, 30)
        assert not app.main.query_one(DeliveryPanel).display
        box = app.main.query_one("#filter", Input)
        box.value = "dev:"
        await pilot.pause()
        assert box.has_class("-invalid") and "no contract terms" in str(box.border_subtitle)
