"""The probe dialog: runs a suite on one node, shows progress per GPU, then the verdicts."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

from fleet.facade import (
    FleetFacade,
    ProbeEvent,
    ProbeFailure,
    ProbeMeasurement,
    ProbeProgress,
    ProbeReport,
    Suite,
)
from tui.failures import failure_text, report_failure
from tui.probe_view import progress_markup, report_markup, results_markup


class ProbeScreen(ModalScreen[ProbeReport | None]):
    CSS_PATH = "probe_screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Cancel / close"),
    ]

    def __init__(self, facade: FleetFacade, node: str, suite: Suite = "quick") -> None:
        super().__init__()
        self.facade = facade
        self.node = node
        self.suite: Suite = suite
        self.report: ProbeReport | None = None
        self.running = False
        self._progress: ProbeProgress | None = None
        self._measured: list[ProbeMeasurement] = []
        self._gpus: set[int] = set()

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(id="probe-progress")
            yield Static(id="probe-table")
            yield Static("[$muted]escape: cancel while running, close when done[/]", id="hint")

    def on_mount(self) -> None:
        dialog = self.query_one("#dialog")
        dialog.border_title = f"Probe {self.node} · {self.suite}"
        self._show_live()
        self.run_probe()

    @work(group="probe", exclusive=True, exit_on_error=False)
    async def run_probe(self) -> None:
        self.running = True
        try:
            self.report = await self.facade.probe(self.node, self.suite, self._on_event)
        except Exception as exc:  # a failed probe is a notification, never a traceback
            report_failure(self, f"Probe {self.node}", exc)
            shown = escape(failure_text(exc))
            self.query_one("#probe-progress", Static).update(f"[$gpu-failed]{shown}[/]")
            return
        finally:
            self.running = False
        self.query_one("#probe-progress", Static).update("")
        self.query_one("#probe-table", Static).update(report_markup(self.report))

    def _on_event(self, event: ProbeEvent) -> None:
        if isinstance(event, ProbeProgress):
            self._progress = event
            self._gpus.add(event.gpu)
        elif isinstance(event, ProbeMeasurement):
            self._measured.append(event)
            self._gpus.add(event.gpu)
        elif isinstance(event, ProbeFailure):
            self.notify(event.message, title=f"Probe {self.node}", severity="warning")
        if self.running and self.is_mounted:
            self._show_live()

    def _show_live(self) -> None:
        self.query_one("#probe-progress", Static).update(progress_markup(self._progress))
        table = results_markup(sorted(self._gpus), self._measured) if self._measured else ""
        self.query_one("#probe-table", Static).update(table)

    def action_close(self) -> None:
        if self.running:
            if self.facade.cancel_probe(self.node):
                self.notify(f"Cancelling the probe on {self.node}", title="Probe")
            return
        self.dismiss(self.report)
