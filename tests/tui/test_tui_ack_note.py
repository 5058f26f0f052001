"""The ack dialog's note keeps what is typed after Tab moved focus to the buttons."""

from __future__ import annotations

from collections.abc import Callable

from fleet.alerts import Acknowledgement
from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import GpuFleetApp
from tui.screens.ack_screen import AckScreen


async def test_text_typed_after_tab_goes_into_the_note(
    make_app: Callable[..., GpuFleetApp],
) -> None:
    app = make_app(StaticFleet([demo_snapshot(2)]))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.shown is not None)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AckScreen))
        # Tab goes to the ticket id, a second Tab to the buttons.
        await pilot.press(*"RMA", "tab", "tab", *"4411", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, AckScreen))
        held = app.desk.acknowledged("node-0001")
        assert isinstance(held, Acknowledgement) and held.note == "RMA4411"
        assert held.ticket is None
