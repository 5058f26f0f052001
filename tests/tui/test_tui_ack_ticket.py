"""The ack dialog's ticket id reaches the desk, and the journal the repairs ledger reads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import Input

from ledger.repairs.evidence import read_acks
from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, toasts, wait_for
from tui.app import GpuFleetApp
from tui.screens.ack_screen import TICKET_MAX, AckScreen

MakeApp = Callable[..., GpuFleetApp]


async def test_the_ticket_id_is_kept_with_the_acknowledgement(
    make_app: MakeApp, tmp_path: Path
) -> None:
    app = make_app(StaticFleet([demo_snapshot(2)], data_dir=tmp_path))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for(pilot, lambda: app.shown is not None)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AckScreen))
        await pilot.press(*"swap booked", "tab", *" CS-4711 ", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, AckScreen))
        held = app.desk.acknowledged("node-0001")
        assert held is not None and (held.note, held.ticket) == ("swap booked", "CS-4711")
        await wait_for(pilot, lambda: any("Ticket CS-4711" in t for t in toasts(app)))
    acks = read_acks(tmp_path)
    assert [(a.node, a.note, a.ticket) for a in acks] == [("node-0001", "swap booked", "CS-4711")]


async def test_no_ticket_is_none_and_a_long_one_is_cut(make_app: MakeApp) -> None:
    app = make_app(StaticFleet([demo_snapshot(2)]))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.shown is not None)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AckScreen))
        await pilot.press(*"no ticket yet", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, AckScreen))
        held = app.desk.acknowledged("node-0001")
        assert held is not None and held.ticket is None
        await pilot.press("down", "a")
        await wait_for(pilot, lambda: isinstance(app.screen, AckScreen))
        # The field one short of full (typing 200 keys costs ~13 s of a Pilot), then typed
        # on past the end: the key that fills it is taken, the ones after it are not.
        ticket = app.screen.query_one("#ticket", Input)
        ticket.value = "x" * (TICKET_MAX - 1)
        await pilot.press("tab", "end", *"yzz", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, AckScreen))
        second = app.desk.acknowledged("node-0002")
        assert second is not None and second.ticket == "x" * (TICKET_MAX - 1) + "y"
