"""Alerts and acknowledgements: telling the operator (and their tools) that something broke.

:class:`AlertDispatcher` turns event-log entries that are transitions to a bad state
(``[alerts] on``) into :class:`Alert` objects, skips what is acknowledged, repeats an alert
for the same node, GPU and verdict at most once per ``repeat_after_s``, sends at most
``max_per_minute`` per minute (the rest are counted into the next one), and delivers each
to the dashboard (bell), a webhook (HTTP POST of JSON) and a command hook (the JSON on
stdin, no shell). Network and process work runs on one sender thread, never in the tick.
"""

from __future__ import annotations

import json
import logging
import queue
import subprocess
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from fleet.event_log import LogEntry
from fleet.settings.alerts_section import AlertsSection

log = logging.getLogger(__name__)

ACKS_FILE = "acknowledged.json"
PROBE_FLAGS = frozenset(("slow", "straggler", "fail"))


@dataclass(frozen=True, slots=True)
class Alert:
    """One alert as sent: the JSON body of the webhook and the command hook."""

    node: str
    gpu: int | None
    verdict: str
    reasons: tuple[str, ...]
    time: str  # ISO 8601, UTC
    t: float
    kind: str
    text: str
    suppressed_before: int = 0  # alerts not sent since the previous one (rate limit)

    def to_json(self) -> bytes:
        body = asdict(self)
        body["reasons"] = list(self.reasons)
        return json.dumps(body, sort_keys=True).encode()


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """An operator's "known bad": the node (or one GPU) stays visible but stops alerting."""

    node: str
    gpu: int | None
    note: str
    at: float


class Acknowledgements:
    """Acknowledged nodes and GPUs, kept in a JSON file so they survive a restart."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._items: dict[tuple[str, int | None], Acknowledgement] = {}
        if path is not None and path.is_file():
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
            for row in rows:
                gpu = row.get("gpu")
                ack = Acknowledgement(
                    str(row["node"]),
                    None if gpu is None else int(gpu),
                    str(row.get("note", "")),
                    float(row.get("at", 0.0)),
                )
                self._items[(ack.node, ack.gpu)] = ack
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable acknowledgements file %s: %s", path, exc)

    def _save(self) -> None:
        if self.path is None:
            return
        rows = [asdict(a) for a in self._items.values()]
        tmp = self.path.with_name(f".tmp-{self.path.name}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(rows, indent=1), encoding="utf-8")
            tmp.replace(self.path)
        except OSError as exc:
            log.warning("could not save acknowledgements to %s: %s", self.path, exc)

    def add(self, node: str, gpu: int | None, note: str, at: float) -> Acknowledgement:
        ack = Acknowledgement(node, gpu, note.strip(), at)
        self._items[(node, gpu)] = ack
        self._save()
        return ack

    def remove(self, node: str, gpu: int | None) -> bool:
        found = self._items.pop((node, gpu), None) is not None
        if found:
            self._save()
        return found

    def covering(self, node: str, gpu: int | None) -> Acknowledgement | None:
        """The acknowledgement that covers ``node`` (or its GPU ``gpu``), if any."""
        return self._items.get((node, gpu)) or self._items.get((node, None))

    def all(self) -> list[Acknowledgement]:
        return sorted(
            self._items.values(), key=lambda a: (a.node, a.gpu if a.gpu is not None else -1)
        )


AlertListener = Callable[[Alert], None]


class AlertDispatcher:
    """Decides which log entries alert, and sends them."""

    def __init__(
        self,
        cfg: AlertsSection,
        acks: Acknowledgements,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cfg = cfg
        self.acks = acks
        self._clock = clock
        self._last_sent: dict[tuple[str, int | None, str], float] = {}
        self._sent_at: deque[float] = deque()
        self._suppressed = 0
        self._listeners: list[AlertListener] = []
        self._outbox: queue.Queue[Alert | None] = queue.Queue()
        self._sender: threading.Thread | None = None
        self.failures = 0  # webhook or command deliveries that failed

    def subscribe(self, listener: AlertListener) -> Callable[[], None]:
        """Call ``listener`` with every alert sent (the dashboard rings its bell)."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def wants(self, entry: LogEntry) -> bool:
        """Whether ``entry`` is a transition the configuration alerts on."""
        verdict = entry.verdict
        if verdict is None:
            return False
        if entry.kind == "probe":
            return "probe" in self.cfg.on and verdict in PROBE_FLAGS
        if entry.kind in ("gpu", "port"):
            return verdict in self.cfg.on
        return entry.kind == verdict and verdict in self.cfg.on  # node state transitions

    def observe(self, entries: Iterable[LogEntry]) -> list[Alert]:
        """Alert on the wanted, unacknowledged entries; returns the alerts sent."""
        sent = []
        for entry in entries:
            if not self.wants(entry) or self.acks.covering(entry.node, entry.gpu) is not None:
                continue
            alert = self._admit(entry)
            if alert is not None:
                sent.append(alert)
                self._deliver(alert)
        return sent

    def _admit(self, entry: LogEntry) -> Alert | None:
        now = self._clock()
        key = (entry.node, entry.gpu, entry.verdict or "")
        last = self._last_sent.get(key)
        if last is not None and now - last < self.cfg.repeat_after_s:
            return None  # the same alert, again: a flap, not news
        while self._sent_at and now - self._sent_at[0] >= 60.0:
            self._sent_at.popleft()
        if len(self._sent_at) >= self.cfg.max_per_minute:
            self._suppressed += 1
            return None
        self._sent_at.append(now)
        self._last_sent[key] = now
        suppressed, self._suppressed = self._suppressed, 0
        reasons = tuple(r.strip() for r in entry.text.split(":", 1)[-1].split(";") if r.strip())
        stamp = datetime.fromtimestamp(entry.t, UTC).isoformat(timespec="seconds")
        return Alert(
            entry.node,
            entry.gpu,
            entry.verdict or "",
            reasons,
            stamp,
            entry.t,
            entry.kind,
            entry.text,
            suppressed,
        )

    def _deliver(self, alert: Alert) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(alert)
            except Exception:
                log.exception("alert listener %r failed", listener)
        if self.cfg.webhook or self.cfg.command:
            if self._sender is None:
                self._sender = threading.Thread(
                    target=self._send_forever, name="gpufleet-alerts", daemon=True
                )
                self._sender.start()
            self._outbox.put(alert)

    def _send_forever(self) -> None:
        while (alert := self._outbox.get()) is not None:
            try:
                if self.cfg.webhook:
                    self._post(alert)
                if self.cfg.command:
                    self._run_command(alert)
            finally:
                self._outbox.task_done()
        self._outbox.task_done()

    def _post(self, alert: Alert) -> None:
        assert self.cfg.webhook is not None
        request = urllib.request.Request(
            self.cfg.webhook,
            data=alert.to_json(),
            headers={"Content-Type": "application/json", "User-Agent": "gpufleet"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.cfg.webhook_timeout_s) as reply:
                reply.read(4096)
        except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
            self.failures += 1
            log.warning("alert webhook %s failed: %s", self.cfg.webhook, exc)

    def _run_command(self, alert: Alert) -> None:
        try:
            subprocess.run(  # argv from the operator's config, no shell
                list(self.cfg.command),
                input=alert.to_json(),
                timeout=self.cfg.command_timeout_s,
                check=True,
                capture_output=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self.failures += 1
            log.warning("alert command %s failed: %s", self.cfg.command[0], exc)

    def drain(self, timeout_s: float = 10.0) -> bool:
        """Wait until every queued alert was sent (or failed); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self._outbox.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            with self._outbox.all_tasks_done:
                self._outbox.all_tasks_done.wait(0.05)
        return True

    def close(self) -> None:
        """Stop the sender thread after what is queued."""
        if self._sender is not None:
            self._outbox.put(None)
            self._sender.join(timeout=self.cfg.webhook_timeout_s + self.cfg.command_timeout_s)
            self._sender = None
