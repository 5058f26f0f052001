"""The operator's actions on the dashboard app: event log, acknowledgements, alerts, ssh.

A base class of :class:`tui.app.GpuFleetApp` (kept apart so app.py stays small); it
reaches the domain through the desk and the facade only.
"""

from __future__ import annotations

import asyncio
import shlex
import threading
import time

from textual.app import App, SuspendNotSupported

from fleet.facade import Alert, FleetFacade, FleetSnapshot, OperatorDesk, SshLogin
from tui.alert_toast import GATHER_S, alert_toast
from tui.failures import report_failure
from tui.screens.ack_screen import AckAnswer, AckScreen
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.event_log_screen import EventLogScreen
from tui.screens.main_screen import MainScreen
from tui.screens.node_screen import NodeScreen
from tui.ssh_session import run_session
from tui.terminal_notify import notification
from tui.widgets.fleet_grid import FleetGrid


class OperatorActions(App[None]):
    """`l` event log, `a` acknowledge, `S` ssh, and the alert listener."""

    # Set by GpuFleetApp.__init__ / on_mount.
    facade: FleetFacade
    desk: OperatorDesk
    main: MainScreen
    shown: FleetSnapshot | None
    alerts_ring: bool
    alerts_notify: bool
    _loop_thread: int
    _event_loop: asyncio.AbstractEventLoop | None

    def __init__(self) -> None:
        super().__init__()
        self._alert_batch: list[Alert] = []  # alerts waiting to share one toast
        self.in_ssh = False  # the terminal is an ssh session's: the app writes nothing to it

    def _focused_node(self) -> str | None:
        if isinstance(self.screen, NodeScreen):
            return self.screen.node_name
        node = self.main.query_one(FleetGrid).cursor_node if self.main.is_mounted else None
        return node.name if node is not None else None

    def action_event_log(self) -> None:
        if any(isinstance(s, EventLogScreen) for s in self.screen_stack):
            return
        now = self.shown.taken_at if self.shown is not None else time.time()
        self.push_screen(EventLogScreen(self.facade, self.desk, now))

    def action_acknowledge(self) -> None:
        name = self._focused_node()
        node = self.shown.node(name) if self.shown is not None and name else None
        if node is None:
            self.notify("No node under the cursor", title="Acknowledge", severity="warning")
            return
        desk = self.desk
        held = desk.acknowledged(node.name)
        if held is not None and held.gpu is None:
            question = f"{node.name} is acknowledged: {held.note or 'no note'}.\nRemove that?"

            def remove(yes: bool | None) -> None:
                if yes:
                    desk.unacknowledge(node.name, None)
                    self.refresh_acks()
                    self.notify(f"{node.name} alerts again", title="Acknowledge")

            self.push_screen(ConfirmScreen("Acknowledged", question), callback=remove)
            return

        def chosen(answer: AckAnswer | None) -> None:
            if answer is None:
                return
            gpu, note, ticket = answer
            desk.acknowledge(node.name, gpu, note, ticket=ticket)
            self.refresh_acks()
            what = node.name if gpu is None else f"{node.name} GPU {gpu}"
            on_ticket = f" Ticket {ticket}." if ticket else ""
            self.notify(
                f"{what}: visible, no alerts. {note}{on_ticket}", title="Acknowledged", markup=False
            )

        self.push_screen(AckScreen(node), callback=chosen)

    def action_ssh(self) -> None:
        """Run ssh into the node under the cursor on the terminal, beside the monitor."""
        if self.in_ssh:
            return
        name = self._focused_node()
        argv: list[str] | None = None
        if name and isinstance(self.facade, SshLogin):
            try:
                argv = self.facade.ssh_argv(name)
            except Exception as exc:  # a facade failure is a notification, never a traceback
                report_failure(self, "ssh", exc)
                return
        if not argv:
            self.notify("No SSH target for this node", title="ssh", severity="warning")
            return
        self.in_ssh = True
        self.run_worker(
            self._ssh_session(argv, name or ""), group="ssh", exclusive=True, exit_on_error=False
        )

    async def _ssh_session(self, argv: list[str], node: str) -> None:
        """The screen is suspended and held (nothing drawn on ssh's terminal); the session
        waits on a thread, so the event loop, and the fleet's tick on it, go on."""
        shown = shlex.join(argv)
        try:
            # No frame is written while the terminal is ssh's: the batch holds them all.
            with self.batch_update(), self.suspend():
                returncode = await asyncio.to_thread(run_session, argv, node)
            self.refresh(layout=True)
        except SuspendNotSupported:
            self.notify(f"Cannot suspend here; run: {shown}", title="ssh", severity="warning")
            return
        except OSError as exc:
            self.notify(f"{exc}: {shown}", title="ssh", severity="error")
            return
        finally:
            self.in_ssh = False
        if returncode != 0:
            self.notify(f"ssh exited with {returncode}: {shown}", title="ssh")

    def refresh_acks(self) -> None:
        """Show every acknowledgement on the grid (node -> label)."""
        labels: dict[str, list[str]] = {}
        for ack in self.desk.acknowledgements():
            what = "node" if ack.gpu is None else f"GPU {ack.gpu}"
            labels.setdefault(ack.node, []).append(f"{what}: {ack.note}" if ack.note else what)
        if self.main.is_mounted:
            self.main.query_one(FleetGrid).set_acks({n: ", ".join(v) for n, v in labels.items()})

    def _on_alert(self, alert: Alert) -> None:
        """The desk's alert listener: bell and notification, on the message loop."""
        if threading.get_ident() != self._loop_thread:
            if self._event_loop is not None:
                self._event_loop.call_soon_threadsafe(self._on_alert, alert)
            return
        # A listener may run in the fleet's own task, outside the app's context: a timer
        # started there ticks without the active app (LookupError at shutdown, no toast),
        # so the alert is taken as one of the app's own messages.
        self.call_later(self._take_alert, alert)

    def _take_alert(self, alert: Alert) -> None:
        if self.alerts_ring and not self.in_ssh:
            self.bell()
        more = f" (+{alert.suppressed_before} held back)" if alert.suppressed_before else ""
        terminal = not self.is_headless and self._driver is not None and not self.in_ssh
        if self.alerts_notify and terminal and self._driver is not None:
            # As App.bell does: the driver is the terminal; there is no public writer.
            self._driver.write(notification(f"Alert {alert.node}", alert.text + more))
        self._alert_batch.append(alert)
        if len(self._alert_batch) == 1:  # the first of a burst: the toast waits for the rest
            self.set_timer(GATHER_S, self._show_alerts)

    def _show_alerts(self) -> None:
        batch, self._alert_batch = self._alert_batch, []
        if batch:
            title, message = alert_toast(batch)
            self.notify(message, title=title, severity="error", timeout=10, markup=False)
