"""The delivery and campaign panels, drawn from what the facade hands over, and the
grid's state:idle and dev: filters with the contract's terms."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from textual.widgets import Input

from fleet.model import FleetSnapshot, NodeSnapshot
from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, filtered, toasts, wait_for
from tui.app import GpuFleetApp
from tui.widgets.campaign_panel import CampaignPanel
from tui.widgets.delivery_panel import DeliveryPanel
from tui.widgets.fleet_grid import FleetGrid

MakeApp = Callable[..., GpuFleetApp]
WIDE = (190, 60)  # the side panels beside the grid, with room for all of them

DEVIATIONS = {"node-0002": ("PCIe Gen4",), "node-0004": ("power 300 W", "memory 79.1 GiB")}
REPORT: dict[str, Any] = {
    "complete": False,
    "timeline": [{"what": "inventory", "ended_at": 1.0}, {"what": "health", "ended_at": 2.0}],
    "summary": {"accepted": 2, "rejected": 1, "pending": 1, "nodes": 4},
    "fabric": {
        "steps": [{"purpose": "ladder", "nodes": ["a", "b"], "status": "ok", "busbw_gbps": 48.2}]
    },
    "nodes": [],
}


def working_fleet() -> FleetSnapshot:
    """Four up nodes, every GPU busy, except: node-0001 GPU 2 idle (SM 0 %), node-0003
    GPU 5 at 20 % (idle only under a 30 % floor), node-0002 GPU 1 idle but held by a
    process that is not the renter's (provider time, not idle)."""
    snap = demo_snapshot(4, faults=False)
    activity = {("node-0001", 2): 0.0, ("node-0003", 5): 20.0, ("node-0002", 1): 0.0}
    nodes = []
    for node in snap.nodes:
        gpus = tuple(
            replace(
                g,
                util_gpu=50.0,
                sm_active=activity.get((node.name, g.index), 60.0),
                foreign_procs=1 if (node.name, g.index) == ("node-0002", 1) else 0,
            )
            for g in node.gpus
        )
        nodes.append(replace(node, gpus=gpus))
    return replace(snap, nodes=tuple(nodes))


class ContractFleet(StaticFleet):
    """A fleet whose facade knows the contract and holds a campaign."""

    def __init__(self, floor: float = 5.0, report: Mapping[str, Any] | None = REPORT) -> None:
        super().__init__([working_fleet()])
        self.floor = floor
        self.report = report

    @property
    def working_floor_percent(self) -> float:
        return self.floor

    def deviations(self, node: NodeSnapshot) -> Sequence[str]:
        return DEVIATIONS.get(node.name, ())

    def delivery_now(self, snapshot: FleetSnapshot) -> Mapping[str, Any] | None:
        return {
            "idle_gpus": 1,
            "idle_cost_per_day": "48.00",
            "currency": "USD",
            "deviating_gpus": 3,
            "deviations": [{"node": "node-0002", "gpu": 0, "what": ["PCIe Gen4"]}],
            "energy_today_kwh": 12.5,
        }

    def campaign_report(self) -> Mapping[str, Any] | None:
        return self.report


async def test_panels_show_what_the_facade_hands_over(make_app: MakeApp) -> None:
    app = make_app(ContractFleet())
    async with app.run_test(size=WIDE) as pilot:
        delivery = app.main.query_one(DeliveryPanel)
        campaign = app.main.query_one(CampaignPanel)
        await wait_for(pilot, lambda: "Idle now" in str(delivery.render()))
        assert delivery.display and campaign.display
        assert "Idle now: 1 GPUs (48.00 USD/day)" in str(delivery.render())
        assert "node-0002 GPU 0: PCIe Gen4" in str(delivery.render())
        text = str(campaign.render())
        assert "Stage: probes" in text and "rejected 1" in text and "48.2 GB/s" in text
        assert campaign.has_class("-rejected")


async def test_without_the_capabilities_the_panels_stay_hidden(make_app: MakeApp) -> None:
    app = make_app(StaticFleet([working_fleet()]))
    async with app.run_test(size=WIDE) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is not None)
        await pilot.pause()
        assert not app.main.query_one(DeliveryPanel).display
        assert not app.main.query_one(CampaignPanel).display
        # state:idle needs no contract (its default floor); dev: does.
        assert await filtered(app, pilot, "state:idle") == ["node-0001"]
        box = app.main.query_one("#filter", Input)
        box.value = "dev:"
        await pilot.pause()
        assert box.has_class("-invalid") and "no contract terms" in str(box.border_subtitle)


async def test_no_campaign_on_record_hides_its_panel(make_app: MakeApp) -> None:
    app = make_app(ContractFleet(report=None))
    async with app.run_test(size=WIDE) as pilot:
        delivery = app.main.query_one(DeliveryPanel)
        await wait_for(pilot, lambda: "Idle now" in str(delivery.render()))
        assert not app.main.query_one(CampaignPanel).display


async def test_idle_and_deviation_filters_use_the_contract(make_app: MakeApp) -> None:
    app = make_app(ContractFleet(floor=30.0))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 4)
        # Under a 30 % floor node-0003's GPU at 20 % is idle; node-0002's idle GPU is
        # someone else's process, so it is not idle time.
        assert await filtered(app, pilot, "state:idle") == ["node-0001", "node-0003"]
        assert await filtered(app, pilot, "dev:") == ["node-0002", "node-0004"]
        assert await filtered(app, pilot, "dev:pcie") == ["node-0002"]
        assert await filtered(app, pilot, "dev:power|memory") == ["node-0004"]
        assert await filtered(app, pilot, "dev:memory state:idle") == []
        box = app.main.query_one("#filter", Input)
        box.value = "dev:fans"
        await pilot.pause()
        assert box.has_class("-invalid") and "unknown deviation fans" in str(box.border_subtitle)
        await box.action_submit()
        await wait_for(pilot, lambda: any("Filter not applied" in t for t in toasts(app)))


async def test_a_failing_delivery_call_is_one_notification(make_app: MakeApp) -> None:
    class Broken(ContractFleet):
        def delivery_now(self, snapshot: FleetSnapshot) -> Mapping[str, Any] | None:
            raise OSError("energy counter unreadable")

    app = make_app(Broken())
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        await wait_for(pilot, lambda: any("energy counter unreadable" in t for t in toasts(app)))
        assert not app.main.query_one(DeliveryPanel).display
        assert app.main.query_one(CampaignPanel).display
