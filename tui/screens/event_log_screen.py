"""`l`: the event log, read from history (so it survives a restart) and this session."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList
from textual.widgets.option_list import Option

from fleet.facade import FleetFacade, LogEntry, OperatorDesk
from tui.log_view import LOG_WINDOWS, entry_markup, filter_entries, kind_width
from tui.messages import OpenNode

REFRESH_S = 5.0


class LogLoaded(Message):
    def __init__(self, entries: list[LogEntry], now: float) -> None:
        super().__init__()
        self.entries = entries
        self.now = now


class EventLogScreen(Screen[None]):
    CSS_PATH = "event_log_screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,l", "close", "Back"),
        Binding("slash", "filter", "Filter"),
        Binding("w", "window", "Window"),
        Binding("enter", "open", "Open node", show=False),
    ]

    def __init__(self, facade: FleetFacade, desk: OperatorDesk, now: float) -> None:
        super().__init__()
        self.facade = facade
        self.desk = desk
        self.now = now
        self.entries: list[LogEntry] = []
        self.shown: list[LogEntry] = []
        self.window_index = 0
        self.loaded = False

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: node-0003  xid  broken  probe", id="log-filter")
        yield OptionList(id="log")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#log", OptionList).focus()
        self._title()
        self.load()
        self.set_interval(REFRESH_S, self.load)

    def _title(self) -> None:
        label, _ = LOG_WINDOWS[self.window_index]
        log = self.query_one("#log", OptionList)
        log.border_title = f"Event log · last {label} · w to change"
        state = f"{len(self.shown)} of {len(self.entries)} entries" if self.loaded else "loading…"
        log.border_subtitle = state

    @work(thread=True, group="event-log", exclusive=True, exit_on_error=False)
    def load(self) -> None:
        _, window_s = LOG_WINDOWS[self.window_index]
        entries = list(self.desk.event_log(window_s))
        latest = self.facade.latest()  # relative times count from the fleet's clock
        now = latest.taken_at if latest is not None else self.now
        self.post_message(LogLoaded(entries, now))

    def on_log_loaded(self, message: LogLoaded) -> None:
        self.entries, self.now, self.loaded = message.entries, message.now, True
        self._show()

    def _show(self) -> None:
        text = self.query_one("#log-filter", Input).value
        self.shown = filter_entries(self.entries, text)
        log = self.query_one("#log", OptionList)
        highlighted = log.highlighted
        if self.shown:
            kind_w = kind_width(self.shown)  # one column for every line
            log.set_options(Option(entry_markup(e, self.now, kind_w=kind_w)) for e in self.shown)
            log.highlighted = min(highlighted or 0, len(self.shown) - 1)
        else:
            empty = "nothing matches the filter" if self.entries else "nothing happened yet"
            log.set_options([Option(f"[$muted]{empty}[/]", disabled=True)])
        self._title()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._show()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#log", OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.shown):
            self.post_message(OpenNode(self.shown[event.option_index].node))

    def action_open(self) -> None:
        log = self.query_one("#log", OptionList)
        if log.highlighted is not None and log.highlighted < len(self.shown):
            self.post_message(OpenNode(self.shown[log.highlighted].node))

    def action_filter(self) -> None:
        self.query_one("#log-filter", Input).focus()

    def action_window(self) -> None:
        self.window_index = (self.window_index + 1) % len(LOG_WINDOWS)
        self.loaded = False
        self._title()
        self.load()

    def action_close(self) -> None:
        self.dismiss(None)
