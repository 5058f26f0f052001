"""Helpers for the dashboard's Pilot tests: waiting on conditions, reading notifications."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets._toast import Toast  # not exported; the notification widgets

from tui.app import GpuFleetApp

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


def read_text(path: Path) -> str:
    """Read a file (a plain function: tests may not block inside async code)."""
    return path.read_text(encoding="utf-8")


def toasts(app: GpuFleetApp) -> list[str]:
    """The text of every notification on screen (title and message)."""
    return [str(t.render()) for t in app.screen.query(Toast)]
