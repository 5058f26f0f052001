"""The export dialog: range, level, resolution, format, path -> ExportRequest.

The path follows the format (choosing Parquet turns ``x.csv`` into ``x.parquet``) and the
format follows a path typed with a known suffix; an existing file is never overwritten
without asking."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from fleet.facade import ExportRequest
from tui.screens.confirm_screen import ConfirmScreen

RANGES = (
    ("last 24 h", "24h"),
    ("last 7 days", "7d"),
    ("last 30 days", "30d"),
    ("from a date…", "date"),
)
LEVELS = (("per GPU", "gpu"), ("per node", "node"), ("fleet", "fleet"))
RESOLUTIONS = (("1 minute", "1m"), ("1 hour", "1h"), ("1 day", "1d"))
FORMATS = (("CSV", "csv"), ("Parquet", "parquet"), ("JSON", "json"))
SUFFIX_FORMAT = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}


def path_for_format(path: str, fmt: str) -> str:
    """``path`` with the suffix of ``fmt``: a known suffix is replaced, none is added,
    and an unknown one is kept (``report.v2`` becomes ``report.v2.csv``)."""
    text = path.strip()
    if not text:
        return text
    p = Path(text)
    if p.suffix.lower() in SUFFIX_FORMAT:
        return str(p.with_suffix(f".{fmt}"))
    return f"{text}.{fmt}"


def format_of(path: str) -> str | None:
    """The format a path's suffix names, or None."""
    return SUFFIX_FORMAT.get(Path(path.strip()).suffix.lower())


def export_range(choice: str, since_date: str, until_date: str) -> tuple[str, str | None]:
    """(since, until) for the request; dates are ISO (YYYY-MM-DD). Raises ValueError."""
    until = until_date.strip() or None
    if until is not None:
        date.fromisoformat(until)
    if choice != "date":
        return choice, until
    since = since_date.strip()
    if not since:
        raise ValueError("give the first day (YYYY-MM-DD)")
    if until is not None and date.fromisoformat(since) > date.fromisoformat(until):
        raise ValueError("the first day is after the last")
    date.fromisoformat(since)
    return since, until


EXPORTS_DIR = "exports"  # under the data directory


def default_path(level: str, resolution: str, fmt: str, directory: Path | None = None) -> Path:
    return (directory or Path.cwd()) / f"gpufleet-{level}-{resolution}.{fmt}"


class ExportScreen(ModalScreen[ExportRequest | None]):
    CSS_PATH = "export_screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, directory: Path | None = None) -> None:
        super().__init__()
        self.directory = directory
        self._path_edited = False

    def compose(self) -> ComposeResult:
        dialog = Vertical(id="dialog")
        dialog.border_title = "Export utilization history"
        with dialog:
            with Grid(id="fields"):
                yield Label("Range")
                yield Select(RANGES, value="7d", allow_blank=False, id="since")
                yield Label("From")
                yield Input(placeholder="YYYY-MM-DD (with 'from a date…')", id="since-date")
                yield Label("Until")
                yield Input(placeholder="YYYY-MM-DD (empty: now)", id="until-date")
                yield Label("Level")
                yield Select(LEVELS, value="node", allow_blank=False, id="level")
                yield Label("Resolution")
                yield Select(RESOLUTIONS, value="1h", allow_blank=False, id="resolution")
                yield Label("Format")
                yield Select(FORMATS, value="csv", allow_blank=False, id="format")
                yield Label("Path")
                yield Input(str(default_path("node", "1h", "csv", self.directory)), id="path")
            with Horizontal(id="buttons"):
                yield Button("Export", variant="primary", id="export")
                yield Button("Cancel", id="cancel")

    def _value(self, select_id: str) -> str:
        return str(self.query_one(f"#{select_id}", Select).value)

    def on_select_changed(self) -> None:
        box = self.query_one("#path", Input)
        fmt = self._value("format")
        if not self._path_edited:
            path = str(
                default_path(self._value("level"), self._value("resolution"), fmt, self.directory)
            )
        elif format_of(box.value) != fmt:
            path = path_for_format(box.value, fmt)
        else:
            return
        with box.prevent(Input.Changed):
            box.value = path

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "path":
            self._path_edited = True
            named = format_of(event.value)
            fmt = self.query_one("#format", Select)
            if named is not None and named != fmt.value:
                with fmt.prevent(Select.Changed):
                    fmt.value = named
        event.input.remove_class("-invalid")
        event.input.border_subtitle = ""

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.dismiss(None)
        else:
            self._submit()

    def on_input_submitted(self) -> None:
        self._submit()

    def _submit(self) -> None:
        box = self.query_one("#path", Input)
        if not box.value.strip():
            box.add_class("-invalid")
            return
        since_box = self.query_one("#since-date", Input)
        until_box = self.query_one("#until-date", Input)
        try:
            since, until = export_range(self._value("since"), since_box.value, until_box.value)
        except ValueError as exc:
            for field in (since_box, until_box):
                field.add_class("-invalid")
            since_box.border_subtitle = str(exc)
            return
        fmt = self._value("format")
        path = Path(path_for_format(box.value, fmt) if format_of(box.value) != fmt else box.value)
        request = ExportRequest(
            path=path.expanduser(),
            since=since,
            until=until,
            level=self._value("level"),  # type: ignore[arg-type]  # Select offers only LEVELS
            resolution=self._value("resolution"),  # type: ignore[arg-type]
            format=fmt,  # type: ignore[arg-type]
        )
        if not request.path.exists():
            self.dismiss(request)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(request)
            else:
                box.add_class("-invalid")
                box.border_subtitle = "exists: choose another path"
                box.focus()

        question = f"{request.path} exists.\nOverwrite it with the {fmt} export?"
        self.app.push_screen(ConfirmScreen("Overwrite?", question), callback=answered)

    def action_cancel(self) -> None:
        self.dismiss(None)
