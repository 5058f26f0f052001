"""The grid's dev: filter and the delivery panel with the node's own contract terms
(GPU count, driver, network), as the delivery ledger labels them now."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from fleet.model import FleetSnapshot, NodeSnapshot
from fleet.settings.contract_section import ContractSection
from ledger.delivery.now import gpu_deviations, node_deviations
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, filtered, wait_for
from tests.tui.test_tui_delivery_campaign import WIDE, MakeApp, working_fleet
from tui.delivery_terms import DEV_WORDS
from tui.node_view import FILTER_HELP
from tui.widgets.delivery_panel import DeliveryPanel
from tui.widgets.fleet_grid import FleetGrid

CONTRACT = ContractSection(gpus_per_node=8, driver_min="550", driver_max="575", power_limit_w=700)


def fleet() -> FleetSnapshot:
    """node-0003 runs driver 535.54.03 (below the contract's 550..575); node-0004's GPU 0
    is capped at 300 W; the rest as contracted."""
    snap = working_fleet()
    nodes = []
    for node in snap.nodes:
        driver = "535.54.03" if node.name == "node-0003" else "570.124.06"
        gpus = tuple(
            replace(g, power_limit_w=300.0 if (node.name, g.index) == ("node-0004", 0) else 700.0)
            for g in node.gpus
        )
        nodes.append(replace(node, driver=driver, gpus=gpus))
    return replace(snap, nodes=tuple(nodes))


class ContractTermsFleet(StaticFleet):
    """A facade whose deviations are the ledger's labels for node and GPUs."""

    def __init__(self) -> None:
        super().__init__([fleet()])

    @property
    def working_floor_percent(self) -> float:
        return CONTRACT.working_floor_percent

    def deviations(self, node: NodeSnapshot) -> Sequence[str]:
        own = node_deviations(node, CONTRACT)
        return own + [label for g in node.gpus for label in gpu_deviations(g, CONTRACT)]

    def delivery_now(self, snapshot: FleetSnapshot) -> Mapping[str, Any] | None:
        node = next(n for n in snapshot.nodes if n.name == "node-0003")
        return {
            "idle_gpus": 0,
            "idle_cost_per_day": None,
            "currency": "USD",
            "deviating_gpus": 9,
            "deviating_nodes": 1,
            "node_deviations": [{"node": "node-0003", "what": node_deviations(node, CONTRACT)}],
            "deviations": [{"node": "node-0004", "gpu": 0, "what": ["power 300 W"]}],
            "energy_today_kwh": 1.0,
        }


def test_every_label_word_is_a_filter_word_and_in_the_help() -> None:
    assert set(DEV_WORDS) == {"power", "pcie", "memory", "nvlink", "model", "gpus", "driver",
                              "network"}  # fmt: skip
    assert "dev:[" + "|".join(DEV_WORDS) + "]" in FILTER_HELP


async def test_a_driver_outside_the_range_matches_dev_driver_and_not_dev_power(
    make_app: MakeApp,
) -> None:
    app = make_app(ContractTermsFleet())
    async with app.run_test(size=SIZE) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 4)
        assert await filtered(app, pilot, "dev:driver") == ["node-0003"]
        assert await filtered(app, pilot, "dev:power") == ["node-0004"]
        assert await filtered(app, pilot, "dev:") == ["node-0003", "node-0004"]
        assert await filtered(app, pilot, "dev:gpus|network|nvlink|model") == []


async def test_the_panel_names_a_node_that_deviates_itself(make_app: MakeApp) -> None:
    app = make_app(ContractTermsFleet())
    async with app.run_test(size=WIDE) as pilot:
        panel = app.main.query_one(DeliveryPanel)
        await wait_for(pilot, lambda: "Deviating now" in str(panel.render()))
        text = str(panel.render())
        assert "node-0003: driver 535.54.03" in text
        assert text.index("node-0003: driver") < text.index("node-0004 GPU 0: power 300 W")
