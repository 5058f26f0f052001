"""Helpers for the dashboard's Pilot tests: waiting on conditions, reading notifications."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input
from textual.widgets._toast import Toast  # not exported; the notification widgets

from tui.app import GpuFleetApp
from tui.widgets.fleet_grid import FleetGrid

SIZE = (140, 45)


async def wait_for(
    pilot: Pilot[None], condition: Callable[[], bool], within_s: float = 20.0
) -> None:
    """Let the app run until ``condition`` holds (pauses, never a sleep), or fail."""
    deadline = asyncio.get_running_loop().time() + within_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {within_s}s")
        await pilot.pause(0.01)


async def filtered(app: GpuFleetApp, pilot: Pilot[None], text: str) -> list[str]:
    """Type ``text`` into the grid's filter, submit it and name the nodes it keeps."""
    grid = app.main.query_one(FleetGrid)
    box = app.main.query_one("#filter", Input)
    box.value = text
    await wait_for(pilot, lambda: grid.filter_text == text)
    await box.action_submit()
    return sorted(n.name for n in grid.rows)


def read_text(path: Path) -> str:
    """Read a file (a plain function: tests may not block inside async code)."""
    return path.read_text(encoding="utf-8")


def toasts(app: GpuFleetApp) -> list[str]:
    """The text of every notification on screen (title and message)."""
    return [str(t.render()) for t in app.screen.query(Toast)]
