"""The node screen's repair history: each repair of the node as one line, and the GPU
serials the node has had. Rows come from the repairs ledger through the facade; node
text (serials, tickets, reasons) is escaped before it reaches markup."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.markup import escape
from textual.reactive import reactive
from textual.widgets import Static

NO_REPAIRS = "No repairs recorded for this node."


@dataclass(frozen=True, slots=True)
class RepairHistoryRow:
    """One repair as the node screen shows it (times already formatted)."""

    detected: str
    line: str  # the event log's one-line story of the repair
    kind: str
    breached: bool = False


def repair_history_markup(rows: Sequence[RepairHistoryRow], serials: Sequence[str]) -> str:
    """Markup of the panel: repairs newest first, then the node's serials."""
    if not rows:
        lines = [NO_REPAIRS]
    else:
        lines = [
            # Colour comes from the screen's .tcss through the -breached class, not here.
            f"{escape(r.detected)}  {escape(r.line)}"
            + ("  (over the contract's term)" if r.breached else "")
            for r in sorted(rows, key=lambda r: r.detected, reverse=True)
        ]
    if serials:
        lines.append("Serials seen: " + ", ".join(escape(s) for s in serials))
    return "\n".join(lines)


class RepairHistory(Static):
    """The panel; the screen assigns new rows (never mutates them)."""

    rows: reactive[tuple[RepairHistoryRow, ...]] = reactive(())
    serials: reactive[tuple[str, ...]] = reactive(())

    def watch_rows(self) -> None:
        self._redraw()

    def watch_serials(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        self.set_class(any(r.breached for r in self.rows), "-breached")
        self.update(repair_history_markup(self.rows, self.serials))
