"""The node screen's process table: read on open, again while open, never after."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import DataTable, Static

from fleet.facade import GpuProcess, ProcessListing
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import GpuFleetApp
from tui.process_view import process_note, process_rows, process_title
from tui.screens.node_screen import NodeScreen


async def test_processes_are_read_on_open_and_every_few_seconds_while_open(
    fleet: StaticFleet, make_app: Callable[..., GpuFleetApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(NodeScreen, "PROCESS_REFRESH_S", 0.05)
    app = make_app(fleet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        screen = app.screen
        assert isinstance(screen, NodeScreen)
        await wait_for(pilot, lambda: len(fleet.process_requests) >= 3)
        assert set(fleet.process_requests) == {screen.node_name}
        table = screen.query_one("#processes", DataTable)
        assert table.row_count == len(screen.processes.processes) > 0  # type: ignore[union-attr]
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, NodeScreen))
        asked = len(fleet.process_requests)
        # Timers of a closed screen are gone: more time passes, no request follows.
        for _ in range(20):
            await pilot.pause(0.02)
        assert len(fleet.process_requests) == asked


async def test_the_main_screen_never_asks_for_processes(
    fleet: StaticFleet, make_app: Callable[..., GpuFleetApp]
) -> None:
    app = make_app(fleet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "down")
        await pilot.pause()
    assert fleet.process_requests == []


class SlowFleet(StaticFleet):
    """Its process requests fail: the screen shows why instead of a table."""

    async def processes(self, node: str) -> ProcessListing:
        self.process_requests.append(node)
        raise ConnectionError("node went away")


async def test_a_failing_request_is_shown_under_the_table(
    make_app: Callable[..., GpuFleetApp],
) -> None:
    from testkit.snapshots import demo_snapshot

    fleet = SlowFleet([demo_snapshot(4)])
    app = make_app(fleet)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        note = app.screen.query_one("#process-note", Static)
        await wait_for(pilot, lambda: "node went away" in str(note.content))
        assert note.display


def test_rows_are_by_gpu_then_memory_and_cut_long_commands() -> None:
    listing = ProcessListing(
        "n",
        100.0,
        (
            GpuProcess(1, 7, "bob", 2 << 30, "x" * 500),
            GpuProcess(0, 8, None, None, None),
            GpuProcess(1, 9, "eve", 5 << 30, "[bold]python3[/]"),
        ),
    )
    rows = process_rows(listing)
    assert [r[0][0] for r in rows] == ["8", "9", "7"]
    assert rows[0][1:] == [("?", "text"), ("0", "text"), ("N/A", "text"), ("(exited)", "text")]
    assert rows[1][3][0] == "5,120 MiB" and rows[1][4][0] == "[bold]python3[/]"
    assert len(rows[2][4][0]) == 120 and rows[2][4][0].endswith("…")
    assert process_title(listing) == "Processes · 3 on 2 GPUs · read 00:01:40 UTC"
    assert process_note(listing) is None
    assert process_note(ProcessListing("n", 1.0)) == "No compute process on any GPU."
