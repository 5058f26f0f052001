"""Fixtures of the dashboard tests: a deterministic fleet and the app factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tui.app import GpuFleetApp, build_app


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
