"""A second gpufleet on the same data directory says, on screen, that it does not record."""

from __future__ import annotations

from pathlib import Path

from collectors.ssh.target import NodeTarget
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from tests.tui.pilot_helpers import SIZE, toasts, wait_for
from tui.app import build_app


async def test_second_runtime_on_a_data_dir_shows_that_it_does_not_record(
    tmp_path: Path,
) -> None:
    config = parse_config({"fleet": {"hosts": ["node-001"]}})
    targets = [NodeTarget(name="node-001", host="127.0.0.1")]
    first = FleetRuntime(config, targets, data_dir=tmp_path)
    second = FleetRuntime(config, targets, data_dir=tmp_path)
    try:
        assert first.history.recording and first.notices == ()
        assert not second.history.recording
        assert len(second.notices) == 1 and "another gpufleet" in second.notices[0]
        app = build_app(second, state_path=tmp_path / "ui.json")
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await wait_for(pilot, lambda: any("another gpufleet" in t for t in toasts(app)))
    finally:
        second.history.close()
        first.history.close()
