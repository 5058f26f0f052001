"""One node: per-GPU telemetry with sparklines, reliability, ports, events, broken intervals
and its repair history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from fleet.facade import (
    BrokenInterval,
    FleetError,
    FleetFacade,
    GpuSeries,
    HasRepairHistory,
    NodeSnapshot,
    OperatorDesk,
    ProcessListing,
    ProcessReader,
    StateHistory,
    current_interval,
    event_entry,
    gpu_job_text,
    merge_log,
)
from tui.draw import Cell
from tui.failures import failure_text, report_failure
from tui.log_view import entry_markup
from tui.node_tables import (
    PORT_COLUMNS,
    RELIABILITY_COLUMNS,
    SPARK_W,
    TELEMETRY_COLUMNS,
    interval_lines,
    node_summary,
    port_row,
    reliability_row,
    telemetry_row,
)
from tui.probe_view import report_markup
from tui.process_view import PROCESS_COLUMNS, process_note, process_rows, process_title
from tui.widgets.repair_history import RepairHistory, RepairHistoryRow

EVENTS_SHOWN = 30


class NodeScreen(Screen[None]):
    CSS_PATH = "node_screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    PROCESS_REFRESH_S = 5.0

    node: reactive[NodeSnapshot | None] = reactive(None, always_update=True, repaint=False)

    def __init__(
        self,
        facade: FleetFacade,
        name: str,
        desk: OperatorDesk | None = None,
    ) -> None:
        super().__init__()
        self.facade = facade
        self.desk = desk
        self.node_name = name
        self.now = 0.0
        self._shown: NodeSnapshot | None = None
        self._series_failed = False
        self._intervals_failed = False
        self._repairs_failed = False
        self._ready = False
        self._processes_pending = False
        self.processes: ProcessListing | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="node-body"):
            yield Static(id="node-summary")
            yield Static(id="intervals", classes="section")
            yield RepairHistory(id="repair-history", classes="section")
            yield DataTable(id="telemetry", cursor_type="row", zebra_stripes=True)
            yield DataTable(id="processes", cursor_type="row")
            yield Static(id="process-note")
            yield DataTable(id="reliability", cursor_type="row")
            yield DataTable(id="ports", cursor_type="row")
            yield Static(id="events", classes="section")
            yield Static(id="probe-results", classes="section")
        yield Footer()

    def on_mount(self) -> None:
        titles = {
            "#intervals": "Broken intervals",
            "#repair-history": "Repairs this month",
            "#telemetry": "GPUs",
            "#processes": process_title(None),
            "#reliability": "Memory errors, NVLink, reasons",
            "#ports": "Ports",
            "#events": "Events (newest first) · l for the whole log",
            "#probe-results": "Probes",
        }
        for selector, title in titles.items():
            self.query_one(selector).border_title = title
        self.query_one("#telemetry", DataTable).add_columns(*TELEMETRY_COLUMNS)
        self.query_one("#reliability", DataTable).add_columns(*RELIABILITY_COLUMNS)
        self.query_one("#ports", DataTable).add_columns(*PORT_COLUMNS)
        self.query_one("#processes", DataTable).add_columns(*PROCESS_COLUMNS)
        self.app.theme_changed_signal.subscribe(self, lambda _t: self._show_node(force=True))
        self._ready = True
        self._show_node(force=True)
        self.refresh_probe()
        # Read when the screen opens, then every few seconds while it stays open (never
        # at the 1 Hz of the telemetry: each read runs a command on the node).
        self._show_processes_note(None)
        self.read_processes()
        self.set_interval(self.PROCESS_REFRESH_S, self.read_processes)

    def read_processes(self) -> None:
        """Ask the node for its GPU processes unless a request is still in flight."""
        reader = self.facade
        if not isinstance(reader, ProcessReader):
            self._show_processes_note("The process list is not available for this fleet.")
            return
        if self._processes_pending:
            return
        self._processes_pending = True
        self.run_worker(self._fetch_processes(reader), group="processes", exit_on_error=False)

    async def _fetch_processes(self, reader: ProcessReader) -> None:
        try:
            listing = await reader.processes(self.node_name)
        except Exception as exc:  # a facade's failure is shown, never a crash of the screen
            # Under the table, not as a toast: it is asked again every few seconds.
            self._show_processes_note(f"Could not read the processes: {failure_text(exc)}")
            return
        finally:
            self._processes_pending = False
        self.processes = listing
        table = self.query_one("#processes", DataTable)
        table.border_title = process_title(listing)
        self._fill("#processes", process_rows(listing))
        self._show_processes_note(process_note(listing))

    def _show_processes_note(self, text: str | None) -> None:
        note = self.query_one("#process-note", Static)
        note.display = text is not None
        note.update(escape(text or ""))

    def refresh_probe(self) -> None:
        """Show the node's latest probe report (after a probe dialog closes)."""
        try:
            report = self.facade.probe_report(self.node_name)
        except FleetError:  # a fleet that cannot tell (NotAvailable) shows the hint instead
            report = None
        hint = "[$muted]No probe results for this node yet: press p to probe it.[/]"
        self.query_one("#probe-results", Static).update(
            report_markup(report) if report is not None else hint
        )

    def watch_node(self) -> None:
        # Not ``is_mounted``: a snapshot can land after the screen mounts but before its
        # children exist; the tables are ready once on_mount has set them up.
        # A screen being popped has lost its children while a snapshot is still applied.
        if self._ready and self.query("#node-summary"):
            self._show_node()

    def _text(self, cell: Cell) -> Text:
        text, role = cell
        colour = self.app.theme_variables.get(role) if role != "text" else None
        return Text(text, style=Style(color=colour) if colour else "")

    def _series(self, node: NodeSnapshot) -> dict[int, GpuSeries]:
        try:
            return {g.index: self.facade.gpu_series(node.name, g.index, SPARK_W) for g in node.gpus}
        except Exception as exc:  # a failing history must not break the node view
            if not self._series_failed:
                report_failure(self, "GPU history", exc)
            self._series_failed = True
            return {}

    def _show_node(self, force: bool = False) -> None:
        node = self.node
        if node is None:
            self.query_one("#node-summary", Static).update(
                f"[$gpu-lost]{escape(self.node_name)} is no longer in the fleet.[/]"
            )
            return
        if node is self._shown and not force:
            return
        self._shown = node
        self.sub_title = node.name
        self.query_one("#node-summary", Static).update(escape(node_summary(node, self.now)))
        series = self._series(node)
        self._fill(
            "#telemetry",
            [
                telemetry_row(g, series.get(g.index), gpu_job_text(node.jobs, g.index))
                for g in node.gpus
            ],
        )
        self._fill("#reliability", [reliability_row(g) for g in node.gpus])
        self._fill("#ports", [port_row(p) for p in node.ports + node.nics])
        intervals = interval_lines(self._intervals(node), self.now)
        self.query_one("#intervals", Static).update(
            escape("\n".join(intervals)) if intervals else "[$muted]none seen[/]"
        )
        self.query_one("#events", Static).update(self._events_markup(node))
        self._show_repairs(node)

    def _show_repairs(self, node: NodeSnapshot) -> None:
        """The repairs ledger's rows for the node (as last computed: nothing is read here);
        without the capability, or after it failed once, the panel is hidden."""
        panel = self.query_one(RepairHistory)
        facade = self.facade
        if not isinstance(facade, HasRepairHistory) or self._repairs_failed:
            panel.display = False
            return
        try:
            lines, serials = facade.repair_history(node.name)
        except Exception as exc:  # asked on every refresh: reported once, then hidden
            report_failure(self, "Repair history", exc)
            self._repairs_failed = True
            panel.display = False
            return
        rows = tuple(RepairHistoryRow(r.detected, r.line, r.kind, r.breached) for r in lines)
        if rows != panel.rows:
            panel.rows = rows
        if tuple(serials) != panel.serials:
            panel.serials = tuple(serials)

    def _intervals(self, node: NodeSnapshot) -> Sequence[BrokenInterval]:
        """The fleet's own record of the node's intervals, else the one it is in now."""
        if isinstance(self.facade, StateHistory) and not self._intervals_failed:
            try:
                return self.facade.broken_intervals(node.name)
            except Exception as exc:  # asked on every refresh: reported once, then the fallback
                report_failure(self, "Broken intervals", exc)
                self._intervals_failed = True
        current = current_interval(node)
        return [current] if current is not None else []

    def _events_markup(self, node: NodeSnapshot) -> str:
        """The node's agent events joined with what the event log saw of it this session
        (verdict transitions, connection changes, probe results), newest first."""
        seen = [e for e in self.desk.session.entries if e.node == node.name] if self.desk else []
        entries = merge_log([event_entry(e) for e in node.events], seen, limit=EVENTS_SHOWN)
        if not entries:
            return "[$muted]no events[/]"
        return "\n".join(entry_markup(e, self.now, with_node=False) for e in entries)

    def _fill(self, selector: str, rows: list[list[Cell]]) -> None:
        table = self.query_one(selector, DataTable)
        cursor = table.cursor_row
        table.clear()
        table.add_rows([[self._text(c) for c in row] for row in rows])
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1), animate=False)
