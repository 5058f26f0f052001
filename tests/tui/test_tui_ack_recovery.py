"""An acknowledgement ends when its node is up again: the grid drops the label, the log
says so, and the node's next failure alerts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from fleet.model import NodeTransition
from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import GpuFleetApp
from tui.widgets.fleet_grid import FleetGrid


async def test_an_ack_is_cleared_when_the_node_recovers(
    make_app: Callable[..., GpuFleetApp],
) -> None:
    first = demo_snapshot(4)
    fleet = StaticFleet([first])
    app = make_app(fleet)
    async with app.run_test(size=SIZE) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 4)
        app.desk.acknowledge("node-0002", None, "RMA 4411 open")
        app.desk.acknowledge("node-0003", None, "still down")
        app.refresh_acks()
        await wait_for(pilot, lambda: "node-0002" in grid.acks)
        t = first.taken_at + 1
        up = NodeTransition("node-0002", "up", t)
        fleet.push(replace(first, taken_at=t, transitions=(up,)))
        await wait_for(pilot, lambda: "node-0002" not in grid.acks)
        assert app.desk.acknowledged("node-0002") is None
        assert app.desk.acknowledged("node-0003") is not None  # not the one that recovered
        assert "node-0003" in grid.acks
        texts = [e.text for e in app.desk.event_log(3600)]
        assert "acknowledgement cleared (node): the node is up again" in texts
