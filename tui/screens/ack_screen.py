"""`a`: acknowledge a node or one GPU as known bad, with a note and the provider's ticket
id (it stops alerting; the repairs ledger reports the ticket)."""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from fleet.facade import NodeSnapshot
from tui.node_view import gpu_problem

WHOLE_NODE = -1
TICKET_MAX = 200  # as the acknowledgement keeps it


class AckAnswer(NamedTuple):
    """What the dialog answers: the GPU (None: the whole node), the note, the ticket id
    (None when left empty)."""

    gpu: int | None
    note: str
    ticket: str | None


def ack_scopes(node: NodeSnapshot) -> list[tuple[str, int]]:
    """The choices: the whole node, then each GPU with a problem, then the others."""
    flagged = [g for g in node.gpus if gpu_problem(g)]
    rest = [g for g in node.gpus if not gpu_problem(g)]
    scopes = [(f"the whole node {node.name}", WHOLE_NODE)]
    scopes.extend((f"GPU {g.index}: {gpu_problem(g)}"[:60], g.index) for g in flagged)
    scopes.extend((f"GPU {g.index}", g.index) for g in rest)
    return scopes


class AckScreen(ModalScreen[AckAnswer | None]):
    """Answers an :class:`AckAnswer`, or None when cancelled."""

    CSS_PATH = "ack_screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, node: NodeSnapshot) -> None:
        super().__init__()
        self.node = node

    def compose(self) -> ComposeResult:
        scopes = ack_scopes(self.node)
        with Vertical(id="dialog"):
            yield Label("Known bad: stays visible, stops alerting.")
            yield Select(scopes, value=WHOLE_NODE, allow_blank=False, id="scope")
            # Coming back to the note (after a Tab) appends; selecting all would replace it.
            yield Input(
                placeholder="note, e.g. ticket #4711, swap booked for Monday",
                id="note",
                select_on_focus=False,
            )
            yield Input(
                placeholder="ticket id (optional), e.g. CS-4711",
                id="ticket",
                max_length=TICKET_MAX,
                select_on_focus=False,
            )
            with Horizontal(id="buttons"):
                yield Button("Acknowledge", variant="warning", id="ack")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#dialog").border_title = f"Acknowledge {self.node.name}"
        self.query_one("#note", Input).focus()

    def on_key(self, event: events.Key) -> None:
        """Text typed while a button has focus (after Tabs) belongs to the note, not to
        nothing. Space still presses the button."""
        if not isinstance(self.focused, Button) or event.character in (None, " "):
            return
        if event.is_printable:
            note = self.query_one("#note", Input)
            note.focus()
            note.insert_text_at_cursor(event.character)
            event.stop()

    def _answer(self) -> None:
        scope = self.query_one("#scope", Select).value
        gpu = None if scope == WHOLE_NODE or not isinstance(scope, int) else scope
        note = self.query_one("#note", Input).value.strip()
        ticket = self.query_one("#ticket", Input).value.strip() or None
        self.dismiss(AckAnswer(gpu, note, ticket))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ack":
            self._answer()
        else:
            self.dismiss(None)

    def on_input_submitted(self) -> None:
        self._answer()

    def action_cancel(self) -> None:
        self.dismiss(None)
