"""The dashboard: header, fleet grid, utilization plot and the side panels."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input

from fleet.facade import (
    FleetFacade,
    FleetSnapshot,
    HasCampaign,
    OperatorDesk,
    collapse_flaps,
    merge_log,
)
from tui.capabilities import DeliveryNow
from tui.delivery_terms import DeliveryTerms
from tui.failures import report_failure
from tui.fleet_digest import FleetDigest
from tui.messages import SeriesLoaded
from tui.node_view import FILTER_HELP, SORT_KEYS, parse_filter
from tui.widgets.campaign_panel import CampaignPanel
from tui.widgets.delivery_panel import DeliveryPanel
from tui.widgets.fleet_grid import FleetGrid
from tui.widgets.header import FleetHeader
from tui.widgets.side_panels import EventsPanel, FailedPanel, InterconnectPanel, SlaPanel
from tui.widgets.util_plot import WINDOWS, UtilPlot, shown_span

SERIES_REFRESH_S = 30.0
SERIES_RETRY_S = 10.0  # while there is too little history to draw
# Below this width the panels move under the grid, so every node line keeps its GPU cells
# and a readable why column; below PLOT_MIN_W the plot gives its place to the panels.
PANELS_BELOW_W = 150
PLOT_MIN_W = 110
SHORT_H = 34
EVENTS_SHOWN = 8
# The newest session entries the panel folds flaps in: a port flapping through more
# changes than the panel has lines still reads as one row, and the fold stays bounded
# per tick (a longer chain is counted from its newest FLAP_SCAN changes).
FLAP_SCAN = 256


class MainScreen(Screen[None]):
    CSS_PATH = "main_screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter"),
        Binding("s", "sort", "Sort"),
        Binding("r", "reverse_sort", "Reverse sort", show=False),
        Binding("m", "toggle_map", "Map"),
        Binding("w", "window", "Util window", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    snapshot: reactive[FleetSnapshot | None] = reactive(None, always_update=True, repaint=False)
    window_index: reactive[int] = reactive(1)

    def __init__(self, facade: FleetFacade, desk: OperatorDesk, *, read_only: bool = False) -> None:
        super().__init__()
        self.facade = facade
        self.desk = desk
        self.read_only = read_only
        self._series_failed = False
        self._applied_filter = ""
        # One pass over each snapshot's nodes for the header, grid and panels together.
        self.digest = FleetDigest()
        self.delivery_terms = _delivery_terms(facade)
        self._ledger_failed: set[str] = set()  # panels whose facade call failed: hidden

    def compose(self) -> ComposeResult:
        yield FleetHeader(id="header", digest=self.digest).data_bind(MainScreen.snapshot)
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield Input(
                    placeholder="node-[001-004]  state:broken  why:xid  gpu:7  probe:any",
                    id="filter",
                    classes="-hidden",
                )
                yield FleetGrid(id="grid", digest=self.digest).data_bind(MainScreen.snapshot)
            with Container(id="right"):
                yield UtilPlot(id="plot")
                yield FailedPanel(id="failed", digest=self.digest).data_bind(MainScreen.snapshot)
                yield InterconnectPanel(id="links", digest=self.digest).data_bind(
                    MainScreen.snapshot
                )
                yield SlaPanel(id="sla").data_bind(MainScreen.snapshot)
                yield CampaignPanel(id="campaign")
                yield DeliveryPanel(id="delivery")
                yield EventsPanel(id="events")
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        self.fit_layout(event.size.width, event.size.height)

    def fit_layout(self, width: int, height: int) -> None:
        """Panels beside the grid when wide; under it (and the plot dropped) when narrow."""
        narrow = width < PANELS_BELOW_W
        self.set_class(narrow, "-narrow")
        self.set_class(narrow and width < PLOT_MIN_W, "-no-plot")
        self.set_class(height < SHORT_H, "-short")

    def on_mount(self) -> None:
        self.fit_layout(self.app.size.width, self.app.size.height)
        self.query_one("#failed").border_title = "Failed GPUs"
        self.query_one("#links").border_title = "Interconnect"
        self.query_one("#sla").border_title = "SLA credit"
        self.query_one("#events").border_title = "Events · l for the log"
        self.query_one("#campaign").border_title = "Acceptance campaign"
        self.query_one("#delivery").border_title = "Delivery now"
        self.query_one(FleetGrid).delivery_terms = self.delivery_terms
        self._show_ledgers()
        self.query_one(FleetGrid).focus()
        self._title_grid()
        if self.read_only:
            self.query_one("#left").border_subtitle = "read-only: node actions hidden"
        self.set_interval(SERIES_REFRESH_S, self.load_series)
        self.call_after_refresh(self.load_series)  # the grid paints first

    # -- data --------------------------------------------------------------------------
    def watch_snapshot(self) -> None:
        # Mounted is not enough: during start-up and teardown the children may be absent.
        if self.is_mounted and self.query(FleetGrid):
            self.call_after_refresh(self._title_grid)  # after the grid has its new rows
            self._show_events()
            self._show_ledgers()

    def _show_ledgers(self) -> None:
        """The campaign and delivery panels, each shown only while its facade call has
        something to show (a fleet without the capability never shows it)."""
        campaign = self.query_one(CampaignPanel)
        report = self._ask("Acceptance campaign", self._campaign_report)
        campaign.display = report is not None
        if report is not None and report != campaign.report:
            campaign.report = report
        delivery = self.query_one(DeliveryPanel)
        doc = self._ask("Delivery", self._delivery_doc)
        delivery.display = doc is not None
        if doc is not None and doc != delivery.doc:
            delivery.doc = doc

    def _campaign_report(self) -> Mapping[str, Any] | None:
        facade = self.facade
        return facade.campaign_report() if isinstance(facade, HasCampaign) else None

    def _delivery_doc(self) -> Mapping[str, Any] | None:
        facade = self.facade
        if not isinstance(facade, DeliveryNow) or self.snapshot is None:
            return None
        return facade.delivery_now(self.snapshot)

    def _ask(
        self, what: str, read: Callable[[], Mapping[str, Any] | None]
    ) -> Mapping[str, Any] | None:
        # Asked every tick: a failure is reported once and its panel stays hidden.
        if what in self._ledger_failed:
            return None
        try:
            return read()
        except Exception as exc:  # a facade's failure is a notification, never a traceback
            self._ledger_failed.add(what)
            report_failure(self, what, exc)
            return None

    def _show_events(self) -> None:
        """The newest session entries, in memory (no file read per tick), a flapping port
        folded into one row as the event log (`l`) shows it."""
        panel = self.query_one(EventsPanel)
        if self.snapshot is None or not panel.display:
            return
        session = self.desk.session
        now, total = self.snapshot.taken_at, session.added
        if panel.is_current(now, total):  # most ticks: nothing new, the same minute
            return
        tail = list(itertools.islice(reversed(session.entries), FLAP_SCAN))
        newest = collapse_flaps(merge_log(tail, limit=FLAP_SCAN))[:EVENTS_SHOWN]
        panel.show(newest, now, total)

    def _title_grid(self) -> None:
        grids = self.query(FleetGrid)
        if not grids:  # the app closed between the snapshot and this refresh
            return
        grid = grids.first()
        total = len(self.snapshot.nodes) if self.snapshot is not None else 0
        order = "▲" if (grid.sort_key == "name") != grid.sort_reverse else "▼"
        parts = [f"Fleet · {len(grid.rows)}/{total} nodes", f"sort: {grid.sort_key} {order}"]
        if grid.map_mode:
            parts.append("map")
        if grid.filter_text:
            parts.append(f"filter: {grid.filter_text}")
        title = " · ".join(parts)
        left = self.query_one("#left")
        if left.border_title != title:
            left.border_title = title

    @property
    def window(self) -> tuple[str, float]:
        return WINDOWS[self.window_index]

    @work(group="series", exclusive=True, exit_on_error=False)
    async def load_series(self) -> None:
        _, window_s = self.window
        try:
            points = list(self.facade.utilization_series(window_s))
        except Exception as exc:  # the facade's failure must not reach the screen as a traceback
            if not self._series_failed:
                report_failure(self, "Utilization history", exc)
            self._series_failed = True
            return
        self._series_failed = False
        self.post_message(SeriesLoaded(window_s, points))

    def on_series_loaded(self, message: SeriesLoaded) -> None:
        label = next((lbl for lbl, s in WINDOWS if s == message.window_s), "")
        plot = self.query_one(UtilPlot)
        span = shown_span(message.points, message.window_s)
        # Within a tenth of the window counts as the whole (long windows are downsampled).
        short = len(message.points) >= 2 and span < 0.9 * message.window_s
        shown = f"last {span / 60:.0f} min of {label}" if short else f"{label} window"
        plot.border_title = f"Fleet utilization · {shown} · w to change"
        plot.show(message.points, message.window_s)
        if len(message.points) < 2:
            self.set_timer(SERIES_RETRY_S, self.load_series)

    # -- actions -----------------------------------------------------------------------
    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.remove_class("-hidden")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        self._applied_filter = ""
        box.value = ""
        box.add_class("-hidden")
        self.query_one(FleetGrid).focus()

    def action_sort(self) -> None:
        grid = self.query_one(FleetGrid)
        grid.sort_key = SORT_KEYS[(SORT_KEYS.index(grid.sort_key) + 1) % len(SORT_KEYS)]
        grid.sort_reverse = False
        self._title_grid()

    def action_reverse_sort(self) -> None:
        grid = self.query_one(FleetGrid)
        grid.sort_reverse = not grid.sort_reverse
        self._title_grid()

    def action_toggle_map(self) -> None:
        grid = self.query_one(FleetGrid)
        grid.map_mode = not grid.map_mode
        self._title_grid()
        if grid.map_mode:
            self.notify(
                "One cell per node; arrows (or j/k) move, enter opens", title="Map", timeout=4
            )

    def action_window(self) -> None:
        self.window_index = (self.window_index + 1) % len(WINDOWS)
        self.load_series()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "filter":
            return
        # Valid text filters as it is typed; invalid text says why and the grid goes back to
        # the filter last applied with enter (never to a half-typed prefix of the bad term).
        grid = self.query_one(FleetGrid)
        text = event.value.strip()
        try:
            parse_filter(text, self.delivery_terms)
        except ValueError as exc:
            event.input.add_class("-invalid")
            event.input.border_subtitle = str(exc)
            grid.filter_text = self._applied_filter
            self._title_grid()
            return
        event.input.remove_class("-invalid")
        event.input.border_subtitle = ""
        grid.filter_text = text
        self._title_grid()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "filter":
            return
        grid = self.query_one(FleetGrid)
        text = event.value.strip()
        try:
            parse_filter(text, self.delivery_terms)
        except ValueError as exc:
            kept = self._applied_filter or "nothing"
            self.notify(
                f"{exc}\nStill filtering by: {kept}\n{FILTER_HELP}",
                title="Filter not applied",
                severity="warning",
            )
            return
        self._applied_filter = text
        grid.filter_text = text
        self._title_grid()
        if not text:
            event.input.add_class("-hidden")
        grid.focus()


def _delivery_terms(facade: FleetFacade) -> DeliveryTerms:
    """The contract's working floor and deviations where the facade knows them."""
    if not isinstance(facade, DeliveryNow):
        return DeliveryTerms()
    if getattr(facade, "contract_terms_known", True) is False:
        # A running fleet always offers the capability; without [contract] it has no
        # terms, and dev: says so rather than matching nothing.
        return DeliveryTerms(facade.working_floor_percent)
    return DeliveryTerms(facade.working_floor_percent, facade.deviations)
