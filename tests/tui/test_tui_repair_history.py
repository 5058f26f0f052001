"""The node screen lists the node's repairs from the facade's repairs ledger."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.pilot import Pilot

from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, toasts, wait_for
from tui.app import GpuFleetApp
from tui.screens.node_screen import NodeScreen
from tui.widgets.fleet_grid import FleetGrid
from tui.widgets.repair_history import RepairHistory

MakeApp = Callable[..., GpuFleetApp]


@dataclass(frozen=True)
class Repair:
    """A repair line as the wiring hands it (any object with these attributes)."""

    detected: str
    line: str
    kind: str
    breached: bool


class RepairingFleet(StaticFleet):
    def __init__(self, repairs: dict[str, tuple[Repair, ...]], fail: bool = False) -> None:
        super().__init__([demo_snapshot(4)])
        self.repairs = repairs
        self.fail = fail
        self.asked: list[str] = []

    def repair_history(self, node: str) -> tuple[tuple[Repair, ...], tuple[str, ...]]:
        self.asked.append(node)
        if self.fail:
            raise OSError("repairs ledger unreadable")
        return self.repairs.get(node, ()), ("1650921000001", "1650921000009<b>")


async def open_node(app: GpuFleetApp, pilot: Pilot[None], moves: int) -> NodeScreen:
    grid = app.main.query_one(FleetGrid)
    await wait_for(pilot, lambda: len(grid.rows) == 4)
    await pilot.press(*(["down"] * moves), "enter")
    await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
    screen = app.screen
    assert isinstance(screen, NodeScreen)
    return screen


async def test_the_node_screen_lists_its_repairs_newest_first(make_app: MakeApp) -> None:
    older = Repair("2026-11-02T10:00Z", "GPU 5 lost (XID 79): swapped in 26 h", "gpu_swap", True)
    newer = Repair("2026-11-20T08:00Z", "node rebooted by the provider in 2 h", "reboot", False)
    fleet = RepairingFleet({"node-0003": (older, newer)})
    app = make_app(fleet)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_node(app, pilot, 2)
        panel = screen.query_one("#repair-history", RepairHistory)
        await wait_for(pilot, lambda: "swapped in 26 h" in str(panel.render()))
        text = str(panel.render())
        assert text.index("rebooted") < text.index("swapped in 26 h")
        assert "(over the contract's term)" in text
        assert "Serials seen: 1650921000001, 1650921000009<b>" in text
        assert panel.display and panel.has_class("-breached")
        assert "node-0003" in fleet.asked


async def test_a_node_without_repairs_says_so(make_app: MakeApp) -> None:
    app = make_app(RepairingFleet({}))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_node(app, pilot, 0)
        panel = screen.query_one("#repair-history", RepairHistory)
        await wait_for(pilot, lambda: "No repairs recorded" in str(panel.render()))
        assert not panel.has_class("-breached")


async def test_a_failing_ledger_is_one_notification_and_no_panel(make_app: MakeApp) -> None:
    app = make_app(RepairingFleet({}, fail=True))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await open_node(app, pilot, 0)
        await wait_for(pilot, lambda: any("repairs ledger unreadable" in t for t in toasts(app)))
        assert not screen.query_one("#repair-history", RepairHistory).display


async def test_a_fleet_without_a_repairs_ledger_shows_no_panel(make_app: MakeApp) -> None:
    app = make_app(StaticFleet([demo_snapshot(4)]))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_node(app, pilot, 0)
        assert not screen.query_one("#repair-history", RepairHistory).display
