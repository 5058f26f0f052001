"""The node screen's repair history panel: pure drawing and one mounted render."""

from __future__ import annotations

from textual.app import App, ComposeResult

from tui.widgets.repair_history import (
    NO_REPAIRS,
    RepairHistory,
    RepairHistoryRow,
    repair_history_markup,
)

ROWS = (
    RepairHistoryRow("2026-11-02T10:00Z", "gpu-a GPU 3: gpu_xid, gpu_swap +3.9 h", "gpu_swap"),
    RepairHistoryRow("2026-11-02T20:00Z", "gpu-a: unreachable, healthy +10.0 h", "cleared", True),
)


def test_newest_first_breach_marked_and_serials_listed() -> None:
    text = repair_history_markup(ROWS, ("S-a3", "S-new"))
    lines = text.splitlines()
    assert lines[0].startswith("2026-11-02T20:00Z") and lines[0].endswith("contract's term)")
    assert lines[1].startswith("2026-11-02T10:00Z")
    assert lines[2] == "Serials seen: S-a3, S-new"


def test_hostile_serial_text_cannot_inject_markup() -> None:
    text = repair_history_markup((), ("[bold red]x[/]",))
    assert text == NO_REPAIRS + "\nSerials seen: \\[bold red]x\\[/]"


async def test_panel_draws_what_it_is_given() -> None:
    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield RepairHistory(id="repairs")

    async with Host().run_test() as pilot:
        panel = pilot.app.query_one(RepairHistory)
        panel.rows = ROWS
        await pilot.pause()
        assert panel.has_class("-breached")
        assert "gpu_swap +3.9 h" in str(panel.render())
