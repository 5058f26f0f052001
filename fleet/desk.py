"""The operator's desk: the event log, acknowledgements and alerts of one fleet process.

``FleetRuntime`` owns one and feeds it every snapshot; the dashboard reaches it as
``facade.desk``. It joins :mod:`fleet.event_log` (what happened) and :mod:`fleet.alerts`
(who is told, what is known bad).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from fleet.alerts import ACKS_FILE, Acknowledgement, Acknowledgements, AlertDispatcher
from fleet.alerts import AlertListener as AlertListener
from fleet.config.alerts_section import AlertsSection
from fleet.event_log import LogEntry, SessionLog, merge_log, read_history_log
from fleet.model import FleetSnapshot


class OperatorDesk:
    """Event log, acknowledgements and alerts, fed one snapshot per tick."""

    def __init__(
        self,
        cfg: AlertsSection | None = None,
        data_dir: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.data_dir = data_dir
        self._clock = clock
        self.session = SessionLog()
        self.acks = Acknowledgements(data_dir / ACKS_FILE if data_dir is not None else None)
        self.alerts = AlertDispatcher(cfg or AlertsSection(), self.acks, clock)

    def observe(self, snapshot: FleetSnapshot) -> None:
        """Log what changed since the previous snapshot and alert on what broke."""
        self.alerts.observe(self.session.observe(snapshot))

    def event_log(self, window_s: float) -> Sequence[LogEntry]:
        """What happened in the last ``window_s`` seconds, newest first: history (so it
        survives a restart) joined with what this process saw. Reads files: call it off
        the UI thread."""
        now = self._clock()
        since = now - window_s
        return merge_log(read_history_log(self.data_dir, since, now), self.session.since(since))

    def acknowledge(self, node: str, gpu: int | None, note: str) -> Acknowledgement:
        """Mark ``node`` (or one of its GPUs) known bad: it stays visible, stops alerting."""
        return self.acks.add(node, gpu, note, self._clock())

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
