"""The operator's desk: the event log, acknowledgements and alerts of one fleet process.

``FleetRuntime`` owns one and feeds it every snapshot; the dashboard reaches it as
``facade.desk``. It joins :mod:`fleet.event_log` (what happened) and :mod:`fleet.alerts`
(who is told, what is known bad).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from fleet.alerts import ACKS_FILE, Acknowledgement, Acknowledgements, AlertDispatcher
from fleet.alerts import AlertListener as AlertListener
from fleet.event_log import LogEntry, SessionLog, collapse_flaps, merge_log
from fleet.model import FleetSnapshot
from fleet.settings.alerts_section import AlertsSection


class RecordedLog(Protocol):
    """The event log kept on disk (``history.desk_log.DeskHistory``): read back so the
    log survives a restart, and written by the process that records history."""

    def read(self, since: float, until: float) -> list[LogEntry]: ...

    def add(self, entries: Sequence[LogEntry], t: float) -> None: ...

    def close(self) -> None: ...


class OperatorDesk:
    """Event log, acknowledgements and alerts, fed one snapshot per tick.

    With ``history`` the log reads what was recorded before this process started, and
    hands it the GPU, port and connection transitions (the recording process writes them
    to the ``transitions`` table). ``data_dir`` keeps the acknowledgements.
    """

    def __init__(
        self,
        cfg: AlertsSection | None = None,
        data_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
        *,
        history: RecordedLog | None = None,
    ) -> None:
        self.data_dir = data_dir
        self._clock = clock
        self.session = SessionLog()
        self.acks = Acknowledgements(data_dir / ACKS_FILE if data_dir is not None else None)
        self.alerts = AlertDispatcher(cfg or AlertsSection(), self.acks, clock)
        self.history = history
        self.acks_changed = 0  # counts acknowledgements cleared by the desk itself

    def observe(self, snapshot: FleetSnapshot) -> None:
        """Log what changed since the previous snapshot, record it, alert on what broke."""
        new = self.session.observe(snapshot)
        cleared = self._clear_recovered(new)
        # Deliveries that failed for good since the last tick: the sender threads hand them
        # over here, so only the tick touches the session log and history.
        failed = self.alerts.take_failures()
        self.session.add([*cleared, *failed])
        new.extend(cleared)
        if self.history is not None:
            self.history.add([*new, *failed], snapshot.taken_at)
        self.alerts.observe(new)  # a failed delivery is logged, never alerted again

    def _clear_recovered(self, entries: Sequence[LogEntry]) -> list[LogEntry]:
        """A node that is up again is no longer known bad: its acknowledgements go (left,
        its next failure would not alert), and the log says so."""
        cleared: list[LogEntry] = []
        for entry in entries:
            if entry.verdict != "up":
                continue
            held = [a for a in self.acks.all() if a.node == entry.node]
            for ack in held:
                self.acks.remove(ack.node, ack.gpu)
            if held:
                self.acks_changed += 1
                what = ", ".join("node" if a.gpu is None else f"GPU {a.gpu}" for a in held)
                text = f"acknowledgement cleared ({what}): the node is up again"
                cleared.append(LogEntry(entry.t, entry.node, "ack", text))
        return cleared

    def note(self, entries: Sequence[LogEntry]) -> None:
        """Entries the fleet's process learned off the tick (a repair resolved, as the
        refreshed repairs ledger says): in the session log and history, never alerted."""
        if not entries:
            return
        self.session.add(entries)
        if self.history is not None:
            self.history.add(entries, max(e.t for e in entries))

    def event_log(self, window_s: float) -> Sequence[LogEntry]:
        """What happened in the last ``window_s`` seconds, newest first: history (so it
        survives a restart) joined with what this process saw. Reads files: call it off
        the UI thread."""
        now = self._clock()
        since = now - window_s
        recorded = self.history.read(since, now) if self.history is not None else []
        return collapse_flaps(merge_log(recorded, self.session.since(since)))

    def acknowledge(
        self, node: str, gpu: int | None, note: str, ticket: str | None = None
    ) -> Acknowledgement:
        """Mark ``node`` (or one of its GPUs) known bad: it stays visible, stops alerting.
        ``ticket`` is the provider's ticket id, which the repairs ledger reports."""
        return self.acks.add(node, gpu, note, self._clock(), ticket)

    def unacknowledge(self, node: str, gpu: int | None) -> bool:
        return self.acks.remove(node, gpu)

    def acknowledged(self, node: str, gpu: int | None = None) -> Acknowledgement | None:
        return self.acks.covering(node, gpu)

    def acknowledgements(self) -> list[Acknowledgement]:
        return self.acks.all()

    def subscribe_alerts(self, listener: AlertListener) -> Callable[[], None]:
        return self.alerts.subscribe(listener)

    def close(self) -> None:
        self.alerts.close()
        if self.history is not None:
            self.history.close()
