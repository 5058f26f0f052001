"""Shared helpers for the dashboard tests: a deterministic fleet and condition waits."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets._toast import Toast

from tui.app import GpuFleetApp, build_app
from tui.demo_fleet import demo_snapshot
from tui.demo_source import StaticFleet

SIZE = (140, 45)


async def wait_for(
    pilot: Pilot[None], condition: Callable[[], bool], within_s: float = 5.0
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


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "ui-state.json"


@pytest.fixture
def fleet() -> StaticFleet:
    return StaticFleet([demo_snapshot(16)])


@pytest.fixture
def make_app(state_path: Path) -> Callable[..., GpuFleetApp]:
    def make(facade: StaticFleet, **kwargs: object) -> GpuFleetApp:
        kwargs.setdefault("refresh_s", 0.0)
        return build_app(facade, state_path=state_path, **kwargs)  # type: ignore[arg-type]

    return make
