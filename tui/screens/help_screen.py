"""`?`: every key the dashboard answers to, taken from the bindings themselves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

KEY_NAMES = {"slash": "/", "question_mark": "?", "escape": "esc", "ctrl+p": "ctrl+p"}
MOUSE_ROWS: tuple[tuple[str, str], ...] = (
    ("click", "a node line or map cell: put the cursor on it"),
    ("double-click", "a node line or map cell: open the node"),
    ("click", "a column title: sort by it; again: reverse the order"),
    ("click", "a Failed GPUs entry (or enter on it): open its node"),
    ("click", "a key in the footer: run it"),
    ("wheel", "scroll the grid, the map and the panels"),
    ("shift+drag", "select text with the terminal (option+drag on macOS)"),
)


def key_rows(sections: Sequence[tuple[str, Iterable[BindingType]]]) -> list[tuple[str, str, str]]:
    """(section, key, what it does) for every binding with a description."""
    rows = []
    for section, bindings in sections:
        for b in bindings:
            if not isinstance(b, Binding) or not b.description:
                continue
            keys = ", ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in b.key.split(","))
            rows.append((section, keys, b.description))
    return rows


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help_screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        lines, last = [], ""
        # One key column for keys and mouse, as wide as the longest ("pagedown, ctrl+f").
        width = max(len(k) for k in [*(r[1] for r in self.rows), *(m[0] for m in MOUSE_ROWS)])
        for section, key, what in self.rows:
            if section != last:
                lines.append(f"\n[b $primary]{escape(section)}[/]")
                last = section
            lines.append(f"  [b]{escape(key).rjust(width)}[/]  {escape(what)}")
        lines.append("\n[b $primary]Mouse[/]")
        lines.extend(f"  [b]{escape(k).rjust(width)}[/]  {escape(what)}" for k, what in MOUSE_ROWS)
        lines.append(
            "\n[$muted]GPUs: ▁…█ utilization  ! warn or probe slow  ✗ fail  ? lost or missing"
            "  · no data\n"
            "Map, a cell per node: ▁…█ utilization  ! warn  ✗ broken  ? unreachable"
            "  · connecting\n"
            "Ports: ● up  ◐ degraded  ○ down[/]"
        )
        box = VerticalScroll(id="help")
        box.border_title, box.border_subtitle = "Keys", "esc to close"
        with box:
            yield Static("\n".join(lines).lstrip("\n"))
