"""The gpufleet dashboard app and ``build_app``, the factory the CLI and tests use."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, TypeVar

from textual import work
from textual.binding import Binding, BindingType
from textual.command import Provider

from fleet.facade import (
    ExportRequest,
    FleetFacade,
    FleetSnapshot,
    HasDataDir,
    HasDesk,
    OperatorDesk,
)
from themes import DEFAULT_THEME, GPUFLEET_DARK, THEME_NAMES, THEMES
from tui.commands import FleetCommands
from tui.failures import report_failure
from tui.messages import OpenNode, SnapshotArrived
from tui.operator_actions import OperatorActions
from tui.probe_view import busy_question, many_warnings
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.event_log_screen import EventLogScreen
from tui.screens.export_screen import EXPORTS_DIR, ExportScreen
from tui.screens.help_screen import HelpScreen, key_rows
from tui.screens.main_screen import MainScreen
from tui.screens.node_screen import NodeScreen
from tui.screens.probe_screen import ProbeScreen
from tui.theme_store import ThemeStore
from tui.widgets.fleet_grid import FleetGrid

# Actions that change something on a node; hidden when the dashboard is read-only.
NODE_CHANGING_ACTIONS: frozenset[str] = frozenset({"probe", "probe_suspects", "ssh"})
T = TypeVar("T")


class GpuFleetApp(OperatorActions):
    TITLE = "gpufleet"
    # Only gpufleet's actions and themes (see tui.commands), not Textual's system commands.
    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {FleetCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "probe", "Probe node"),
        Binding("P", "probe_suspects", "Probe suspects"),
        Binding("e", "export", "Export"),
        Binding("t", "next_theme", "Theme"),
        Binding("l", "event_log", "Event log"),
        Binding("a", "acknowledge", "Acknowledge", show=False),
        Binding("S", "ssh", "ssh into node", show=False),
        Binding("question_mark", "help", "Keys"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        facade: FleetFacade,
        *,
        theme: str | None = None,
        read_only: bool = False,
        refresh_s: float = 1.0,
        state_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.facade = facade
        self.read_only = read_only or facade.read_only
        self.refresh_s = refresh_s  # kept for callers and config; no longer delays a snapshot
        self.theme_store = ThemeStore(state_path)
        self.shown: FleetSnapshot | None = None
        self._pending: FleetSnapshot | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._unsubscribe_alerts: Callable[[], None] | None = None
        # A facade without a desk (an older or remote one) gets a local desk fed from the
        # snapshots this app receives: the event log and alerts still work, from this run.
        own = facade.desk if isinstance(facade, HasDesk) else None
        self.desk: OperatorDesk = own if own is not None else OperatorDesk()
        self._feed_desk = own is None
        self._acks_seen = 0  # the desk's acks_changed last shown on the grid
        self.alerts_ring = self.desk.alerts.cfg.bell
        self.alerts_notify = self.desk.alerts.cfg.notify

        self._event_loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = threading.get_ident()
        for t in THEMES:
            self.register_theme(t)
        self._theme_error = self._pick_theme(theme)
        self.main = MainScreen(facade, self.desk, read_only=self.read_only)
        if self.read_only:
            self.sub_title = "read-only"

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(GPUFLEET_DARK.variables)

    def _pick_theme(self, asked: str | None) -> str | None:
        """Explicit theme, else the one last chosen, else the default; an error in words."""
        name = asked or self.theme_store.load() or DEFAULT_THEME
        if name in self.available_themes:
            self.theme = name
            return None
        self.theme = DEFAULT_THEME
        return f"Unknown theme {name!r}; using {DEFAULT_THEME}. Themes: {', '.join(THEME_NAMES)}"

    # -- lifecycle ---------------------------------------------------------------------
    def on_mount(self) -> None:
        self._event_loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.push_screen(self.main)
        if self._theme_error:
            self.notify(self._theme_error, title="Theme", severity="warning")
        for notice in self.facade.notices:
            self.notify(notice, title="gpufleet", severity="warning", timeout=30)
        self.theme_changed_signal.subscribe(self, lambda t: self._theme_changed(t.name))
        self._unsubscribe = self._guard("Subscribe", lambda: self.facade.subscribe(self._deliver))
        self._unsubscribe_alerts = self._guard(
            "Alerts", lambda: self.desk.subscribe_alerts(self._on_alert)
        )
        self.call_after_refresh(self.refresh_acks)
        first = self._guard("Latest snapshot", self.facade.latest)
        if first is not None:
            self._apply(first)

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._unsubscribe_alerts is not None:
            self._unsubscribe_alerts()

    def _guard(self, what: str, call: Callable[[], T]) -> T | None:
        try:
            return call()
        except Exception as exc:  # a facade failure is a notification, never a traceback
            report_failure(self, what, exc)
            return None

    # -- snapshots ---------------------------------------------------------------------
    def _deliver(self, snapshot: FleetSnapshot) -> None:
        """The facade's listener: hand the snapshot to the message loop (from any thread)."""
        message = SnapshotArrived(snapshot)
        if self._feed_desk:
            self.desk.observe(snapshot)  # every snapshot, before any is collapsed
        if threading.get_ident() == self._loop_thread:
            self.post_message(message)
        elif self._event_loop is not None:
            self._event_loop.call_soon_threadsafe(self.post_message, message)

    def on_snapshot_arrived(self, message: SnapshotArrived) -> None:
        """Apply each snapshot when it arrives, right after the next screen refresh.

        No fixed delay: that only added latency (up to a refresh period on top of the
        tick). A flood already collapses to the newest in the message queue
        (``SnapshotArrived.can_replace``) and in ``_pending``; waiting for the refresh
        lets a screen being pushed or popped finish before its widgets are fed.
        """
        scheduled = self._pending is not None
        self._pending = message.snapshot
        if not scheduled:
            self.call_after_refresh(self._apply_pending)

    def _apply_pending(self) -> None:
        snapshot, self._pending = self._pending, None
        if snapshot is not None:
            self._apply(snapshot)

    def _apply(self, snapshot: FleetSnapshot) -> None:
        self.shown = snapshot
        if self.desk.acks_changed != self._acks_seen:  # the desk cleared a recovered node's
            self._acks_seen = self.desk.acks_changed
            self.refresh_acks()
        self.main.snapshot = snapshot
        for screen in self.screen_stack:
            if isinstance(screen, NodeScreen):
                screen.now = snapshot.taken_at
                screen.node = snapshot.node(screen.node_name)

    # -- actions -----------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (self.read_only and action in NODE_CHANGING_ACTIONS)

    def on_open_node(self, message: OpenNode) -> None:
        self.open_node(message.name)

    def open_node(self, name: str) -> None:
        screen = NodeScreen(self.facade, name, self.desk)
        if self.shown is not None:
            screen.now = self.shown.taken_at
            screen.node = self.shown.node(name)
        self.push_screen(screen)

    def _on_main(self) -> MainScreen:
        while self.screen is not self.main and len(self.screen_stack) > 2:
            self.pop_screen()
        return self.main

    def action_filter(self) -> None:
        self._on_main().action_filter()

    def action_sort(self) -> None:
        self._on_main().action_sort()

    def action_window(self) -> None:
        self._on_main().action_window()

    def action_next_theme(self) -> None:
        names = list(THEME_NAMES)
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]

    def use_theme(self, name: str) -> None:
        self.theme = name

    def _theme_changed(self, name: str) -> None:
        self.notify(f"Theme: {name}  (t for the next one)", title="Theme", timeout=3)
        self._persist_theme(name)

    def _persist_theme(self, name: str) -> None:
        try:
            self.theme_store.save(name)
        except OSError as exc:
            self.notify(f"Could not remember the theme: {exc}", title="Theme", severity="warning")

    def action_help(self) -> None:
        palette: list[BindingType] = [Binding("ctrl+p", "command_palette", "Command palette")]
        sections: list[tuple[str, list[BindingType]]] = [
            ("Dashboard", MainScreen.BINDINGS),
            ("Fleet grid", FleetGrid.BINDINGS),
            ("Node screen", NodeScreen.BINDINGS),
            ("Event log", EventLogScreen.BINDINGS),
            ("Everywhere", [*self.BINDINGS, *palette]),
        ]
        self.push_screen(HelpScreen(key_rows(sections)))

    def action_export(self) -> None:
        # Into the data directory, never the working directory (a checkout under `make demo`).
        data_dir = self.facade.data_dir if isinstance(self.facade, HasDataDir) else None
        directory = data_dir / EXPORTS_DIR if data_dir is not None else None
        self.push_screen(ExportScreen(directory), callback=self._export_chosen)

    def _export_chosen(self, request: ExportRequest | None) -> None:
        if request is not None:
            self.run_export(request)

    @work(group="export", exclusive=True, exit_on_error=False)
    async def run_export(self, request: ExportRequest) -> None:
        self.notify(f"Writing {request.path} …", title="Export", timeout=3)
        try:
            path = await self.facade.export(request)
        except Exception as exc:  # shown as a notification, never a traceback
            report_failure(self, "Export failed", exc)
            return
        self.notify(f"Wrote {path}", title="Export")

    # -- probes (never without the operator asking) ----------------------------------------
    def action_probe(self) -> None:
        name = self._focused_node()
        if name is None:
            self.notify("No node under the cursor", title="Probe", severity="warning")
            return
        node = self.shown.node(name) if self.shown is not None else None
        question = busy_question(node) if node is not None else None
        if question is None:
            self.start_probe(name)
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.start_probe(name)

        self.push_screen(ConfirmScreen(f"Probe {name}?", question), callback=confirmed)

    def start_probe(self, name: str) -> None:
        if self.read_only:  # the binding is hidden too; this guards the palette and callers
            self.notify("Read-only: probes are off", title="Probe", severity="warning")
            return
        self.push_screen(ProbeScreen(self.facade, name), callback=self._probe_closed)

    def _probe_closed(self, _report: object) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, NodeScreen):
                screen.refresh_probe()

    def action_probe_suspects(self) -> None:
        names = suspect_nodes(self.shown)
        if not names or self.shown is None:
            self.notify("No broken or suspect node to probe", title="Probe")
            return
        nodes = [n for n in (self.shown.node(m) for m in names) if n is not None]
        acked = {a.node: a.note or "no note" for a in self.desk.acknowledgements()}
        question = "\n".join(
            [
                f"Run the quick probe suite on {len(names)} node(s)?",
                ", ".join(names[:12]) + (" …" if len(names) > 12 else ""),
                *many_warnings(nodes, acked),
            ]
        )

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.probe_many(names)

        self.push_screen(ConfirmScreen("Probe suspects", question), callback=confirmed)

    @work(group="probe-many", exclusive=True, exit_on_error=False)
    async def probe_many(self, names: list[str]) -> None:
        found: dict[str, int] = {}
        for name in names:
            try:
                report = await self.facade.probe(name, "quick")
            except Exception as exc:  # one node's failure must not end the others' probes
                report_failure(self, f"Probe {name}", exc)
                continue
            bad = [v for v in report.verdicts if v.verdict != "pass"]
            found[name] = len(bad)
            state = report.error or f"{report.status}, {len(bad)} GPU(s) not passing"
            self.notify(state, title=f"Probe {name}", severity="warning" if bad else "information")
        flagged = sum(1 for n in found.values() if n)
        self.notify(f"{len(found)} probed, {flagged} with GPUs not passing", title="Probes done")
        self._probe_closed(None)


def suspect_nodes(snapshot: FleetSnapshot | None) -> list[str]:
    """Reachable nodes that are broken or have a GPU that is not ok: worth a probe."""
    if snapshot is None:
        return []
    return [
        n.name
        for n in snapshot.nodes
        if n.state != "unreachable"
        and (n.state == "broken" or any(g.verdict in ("warn", "fail") for g in n.gpus))
    ]


def build_app(
    facade: FleetFacade,
    *,
    theme: str | None = None,
    read_only: bool = False,
    refresh_s: float = 1.0,
    state_path: Path | None = None,
) -> GpuFleetApp:
    """The dashboard over ``facade``. ``theme``: explicit choice (else the last chosen one);
    ``state_path``: where the chosen theme is remembered (default: user_state_dir)."""
    return GpuFleetApp(
        facade, theme=theme, read_only=read_only, refresh_s=refresh_s, state_path=state_path
    )
