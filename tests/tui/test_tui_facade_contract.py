"""The dashboard asks the facade through typed capabilities and reports FleetErrors once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from textual.widgets import Static

from fleet.facade import (
    ExportRequest,
    FleetFacade,
    FleetSnapshot,
    GpuSeries,
    HasDesk,
    NotAvailable,
    ProbeListener,
    ProbeReport,
    ProcessReader,
    SshLogin,
    Suite,
    UnknownNode,
    UtilizationPoint,
)
from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, toasts, wait_for
from tui.app import GpuFleetApp
from tui.failures import failure_text
from tui.screens.node_screen import NodeScreen

MakeApp = Callable[..., GpuFleetApp]


class BareFleet:
    """Only what every facade must have: no desk, no SSH login, no process list."""

    read_only = False
    notices: Sequence[str] = ()

    def __init__(self, snapshot: FleetSnapshot) -> None:
        self.snapshot = snapshot

    def latest(self) -> FleetSnapshot | None:
        return self.snapshot

    def subscribe(self, listener: Callable[[FleetSnapshot], None]) -> Callable[[], None]:
        return lambda: None

    def utilization_series(self, window_s: float) -> Sequence[UtilizationPoint]:
        return []

    def gpu_series(self, node: str, gpu: int, points: int = 120) -> GpuSeries:
        return GpuSeries((), (), ())

    async def export(self, request: ExportRequest) -> Path:
        raise NotAvailable("this fleet records no history (no data directory)")

    async def probe(
        self, node: str, suite: Suite = "quick", on_progress: ProbeListener | None = None
    ) -> ProbeReport:
        raise NotAvailable(f"no real {node} to probe")

    def cancel_probe(self, node: str) -> bool:
        return False

    def probe_report(self, node: str) -> ProbeReport | None:
        return None


def test_capabilities_are_types_a_bare_facade_lacks() -> None:
    bare: FleetFacade = BareFleet(demo_snapshot(4))  # mypy: the core protocol is enough
    assert not isinstance(bare, HasDesk | SshLogin | ProcessReader)
    full = StaticFleet([demo_snapshot(4)])
    assert isinstance(full, HasDesk) and isinstance(full, SshLogin)
    assert isinstance(full, ProcessReader)


async def test_a_bare_facade_runs_the_dashboard_and_says_what_it_lacks(
    make_app: MakeApp,
) -> None:
    app = make_app(BareFleet(demo_snapshot(4)))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.shown is not None)
        assert app.desk is not None  # a desk of its own, fed from the snapshots
        await pilot.press("S")
        await wait_for(pilot, lambda: any("No SSH target" in t for t in toasts(app)))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        note = app.screen.query_one("#process-note", Static)
        await wait_for(pilot, lambda: "not available for this fleet" in str(note.content))


async def test_a_fleet_error_from_export_is_reported_once_in_its_own_words(
    make_app: MakeApp, tmp_path: Path
) -> None:
    app = make_app(BareFleet(demo_snapshot(4)))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.run_export(ExportRequest(path=tmp_path / "x.csv"))
        await pilot.app.workers.wait_for_complete()
        await wait_for(pilot, lambda: any("Export failed" in t for t in toasts(app)))
        failed = [t for t in toasts(app) if "Export failed" in t]
        assert len(failed) == 1
        assert "this fleet records no history (no data directory)" in failed[0]
        assert "NotAvailable" not in failed[0]  # the operator reads the sentence, not a type


def test_failure_text_names_the_type_only_of_what_is_not_a_fleet_error() -> None:
    assert failure_text(UnknownNode("gpu-9 is not part of the fleet")) == (
        "gpu-9 is not part of the fleet"
    )
    assert failure_text(OSError("disk full")) == "OSError: disk full"


async def test_the_static_fleet_names_an_unknown_node_as_a_fleet_error() -> None:
    fleet = StaticFleet([demo_snapshot(4)])
    with pytest.raises(UnknownNode, match=r"^nowhere is not part of the fleet$"):
        await fleet.processes("nowhere")
    with pytest.raises(NotAvailable):
        await fleet.probe("node-0001")
