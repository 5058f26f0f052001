"""The dashboard asks the facade through typed capabilities and reports FleetErrors once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Static

from fleet.facade import (
    BrokenInterval,
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
    StateHistory,
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


async def test_without_a_state_history_the_node_screen_shows_the_current_interval(
    make_app: MakeApp,
) -> None:
    snap = demo_snapshot(4)
    broken = next(n for n in snap.nodes if n.state == "broken")
    app = make_app(BareFleet(snap))
    assert not isinstance(app.facade, StateHistory)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.shown is not None)
        app.open_node(broken.name)
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen) and _composed(app))
        intervals = app.screen.query_one("#intervals", Static)
        await wait_for(pilot, lambda: "→ now" in str(intervals.content))
        assert broken.broken_reasons[0] in str(intervals.content)


class ForgetfulFleet(StaticFleet):
    """Its state history fails: reported once, then the node's current interval."""

    def broken_intervals(self, node: str) -> Sequence[BrokenInterval]:
        raise NotAvailable("the state history is not loaded yet")


async def test_a_failing_state_history_is_reported_once(make_app: MakeApp) -> None:
    snap = demo_snapshot(4)
    broken = next(n for n in snap.nodes if n.state == "broken")
    fleet = ForgetfulFleet([snap])
    app = make_app(fleet)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.open_node(broken.name)
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen) and _composed(app))
        intervals = app.screen.query_one("#intervals", Static)
        await wait_for(pilot, lambda: "→ now" in str(intervals.content))
        # A changed node object: the screen draws it again and asks for its intervals again.
        later = replace(broken, last_seen=snap.taken_at + 1)
        nodes = tuple(later if n is broken else n for n in snap.nodes)
        fleet.push(replace(snap, taken_at=snap.taken_at + 1, nodes=nodes))
        screen = app.screen
        assert isinstance(screen, NodeScreen)
        await wait_for(pilot, lambda: screen._shown is later)
        said = [t for t in toasts(app) if "not loaded yet" in t]
        assert len(said) == 1 and "Broken intervals" in said[0]


def _composed(app: GpuFleetApp) -> bool:
    return bool(app.screen.query("#intervals"))
