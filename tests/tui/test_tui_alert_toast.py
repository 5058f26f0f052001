"""Alerts that arrive together share one toast (several stacked toasts hid the grid)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import Context
from dataclasses import replace

from textual.widgets._toast import Toast  # not exported; the notification widgets

from fleet.facade import Alert
from fleet.model import NodeTransition
from testkit.snapshots import T0, demo_snapshot, lose_gpu
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import toasts, wait_for
from tui.alert_toast import alert_toast
from tui.app import GpuFleetApp

MakeApp = Callable[..., GpuFleetApp]


def alert(node: str, text: str, held: int = 0) -> Alert:
    return Alert(node, 5, "lost", (text,), "2027-01-15T21:21:00Z", T0, "gpu", text, held)


def test_one_node_keeps_its_title_and_many_nodes_are_counted() -> None:
    title, message = alert_toast([alert("node-0003", "node broken"), alert("node-0003", "GPU 5")])
    assert title == "Alert node-0003" and message == "node broken\nGPU 5"
    batch = [alert(f"node-000{i}", f"GPU {i} lost", held=i == 6) for i in range(1, 7)]
    title, message = alert_toast(batch)
    assert title == "6 alerts on 6 nodes"
    assert message.splitlines() == [
        "node-0001: GPU 1 lost",
        "node-0002: GPU 2 lost",
        "node-0003: GPU 3 lost",
        "node-0004: GPU 4 lost",
        "… and 2 more: l for the event log",
        "(+1 held back)",
    ]


async def test_three_nodes_breaking_at_once_show_one_toast(make_app: MakeApp) -> None:
    healthy = demo_snapshot(6, faults=False)
    fleet = StaticFleet([healthy])
    app = make_app(fleet)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_for(pilot, lambda: app.main.snapshot is healthy)
        nodes = list(healthy.nodes)
        for i in (1, 2, 4):
            nodes[i] = lose_gpu(nodes[i], 5, T0 + 60)
        broken = replace(
            healthy,
            taken_at=T0 + 60,
            nodes=tuple(nodes),
            transitions=tuple(
                NodeTransition(nodes[i].name, "broken", T0 + 60, ("GPU 5 lost",)) for i in (1, 2, 4)
            ),
        )
        fleet.push(broken)
        await wait_for(pilot, lambda: any("alerts on 3 nodes" in t for t in toasts(app)))
        await pilot.pause()
        assert len(app.screen.query(Toast)) == 1, toasts(app)
        (shown,) = toasts(app)
        assert "node-0002: " in shown and "node-0005: " in shown


async def test_an_alert_from_a_task_outside_the_app_still_shows_its_toast(
    make_app: MakeApp,
) -> None:
    # The attached fleet calls its listeners from its own task, whose context has no
    # active app; a toast timer started there raised LookupError and never showed.
    fleet = StaticFleet([demo_snapshot(6, faults=False)])
    app = make_app(fleet)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        loop = asyncio.get_running_loop()
        loop.call_soon(app._on_alert, alert("node-0003", "GPU 5 lost"), context=Context())
        await wait_for(pilot, lambda: any("GPU 5 lost" in t for t in toasts(app)))
