"""The export dialog offers a path in the fleet's data directory, never the working one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import Input

from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import GpuFleetApp
from tui.screens.export_screen import ExportScreen


class RecordingFleet(StaticFleet):
    def __init__(self, data_dir: Path) -> None:
        super().__init__([demo_snapshot(2)])
        self.data_dir = data_dir


async def test_the_export_path_defaults_into_the_data_directory(
    make_app: Callable[..., GpuFleetApp], tmp_path: Path
) -> None:
    app = make_app(RecordingFleet(tmp_path / "data"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        path = Path(app.screen.query_one("#path", Input).value)
        assert path.parent == tmp_path / "data" / "exports"
        assert path.name == "gpufleet-node-1h.csv"
