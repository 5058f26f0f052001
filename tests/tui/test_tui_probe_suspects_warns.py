"""`P` warns about busy and acknowledged nodes before probing them, as `p` does for one."""

from __future__ import annotations

from collections.abc import Callable

from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import GpuFleetApp, suspect_nodes
from tui.probe_view import busy_question
from tui.screens.confirm_screen import ConfirmScreen


async def test_probe_suspects_names_busy_and_acknowledged_nodes(
    make_app: Callable[..., GpuFleetApp],
) -> None:
    snapshot = demo_snapshot(16)
    suspects = suspect_nodes(snapshot)
    busy = [n for n in suspects if busy_question(snapshot.node(n)) is not None]  # type: ignore[arg-type]
    assert busy  # the fixture's suspects are working nodes: the warning has to show
    app = make_app(StaticFleet([snapshot]))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.shown is not None)
        app.desk.acknowledge(suspects[0], None, "RMA 4411")
        await pilot.press("P")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert isinstance(app.screen, ConfirmScreen)
        lines = app.screen.question.splitlines()
        assert lines[2].startswith("Busy, their jobs slow down: " + ", ".join(busy[:6]))
        assert lines[3] == f"Acknowledged as known bad: {suspects[0]} (RMA 4411)"
