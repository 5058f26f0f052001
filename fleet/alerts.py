"""Alerts and acknowledgements: telling the operator (and their tools) that something broke.

:class:`AlertDispatcher` turns event-log entries that are transitions to a bad state
(``[alerts] on``) into :class:`Alert` objects, skips what is acknowledged, repeats an alert
for the same node, GPU and verdict at most once per ``repeat_after_s``, sends at most
``max_per_minute`` per minute, and delivers each to the dashboard (bell), a webhook (HTTP
POST of JSON) and a command hook (the JSON on stdin, no shell).

What the rate limit holds back is not kept for a later alert (that may never come): the
same batch sends one ``storm`` alert naming every node held back, with the count. Each
receiver has its own sender thread, so a slow webhook never delays the command hook; a
webhook request has a total deadline (a receiver that drips its answer is cut off); a
failed delivery is retried with doubling backoff a bounded number of times, then handed
to the event log as a failure (:meth:`AlertDispatcher.take_failures`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import queue
import socket
import subprocess
import threading
import time
import urllib.parse
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
STORM_NAMES = 200  # nodes a storm alert names; the count and the event log have the rest
REPLY_BYTES = 4096  # of a webhook's answer read (it is not used, only awaited)


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
    nodes: tuple[str, ...] = ()  # a storm: the nodes held back (at most STORM_NAMES)
    count: int = 1  # a storm: how many alerts it stands for

    def to_json(self) -> bytes:
        body = asdict(self)
        body["reasons"] = list(self.reasons)
        body["nodes"] = list(self.nodes)
        return json.dumps(body, sort_keys=True).encode()


@dataclass(frozen=True, slots=True)
class Acknowledgement:
    """An operator's "known bad": the node (or one GPU) stays visible but stops alerting."""

    node: str
    gpu: int | None
    note: str
    at: float
    ticket: str | None = None  # the provider's ticket id, when the operator gave one


MAX_TICKET_CHARS = 200
ACKS_JOURNAL = "acknowledgements.jsonl"
"""Every acknowledgement ever made, one JSON line each, beside the standing file: the
standing file forgets an acknowledgement when it is lifted, and a past repair's record
(time to acknowledge, the ticket) needs it afterwards."""


def _ticket(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:MAX_TICKET_CHARS]


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
                    _ticket(row.get("ticket")),
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

    def add(
        self, node: str, gpu: int | None, note: str, at: float, ticket: str | None = None
    ) -> Acknowledgement:
        ack = Acknowledgement(node, gpu, note.strip(), at, _ticket(ticket))
        self._items[(node, gpu)] = ack
        self._save()
        self._journal(ack)
        return ack

    def _journal(self, ack: Acknowledgement) -> None:
        if self.path is None:
            return
        journal = self.path.with_name(ACKS_JOURNAL)
        try:
            with journal.open("a", encoding="utf-8") as out:  # appended, never rewritten
                out.write(json.dumps(asdict(ack), sort_keys=True) + "\n")
        except OSError as exc:
            log.warning("could not append to %s: %s", journal, exc)

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


class DeliveryError(Exception):
    """A receiver did not take the alert (the message says how)."""


def _cut(sockets: list[socket.socket], expired: threading.Event) -> None:
    """At the deadline: shut the socket, which wakes a read blocked on a dripping answer.

    The socket is kept from the connect: once the answer has begun, the response owns it
    and the connection object no longer holds it."""
    expired.set()
    for sock in sockets:
        with contextlib.suppress(OSError):  # already closed: nothing left to wake
            sock.shutdown(socket.SHUT_RDWR)


def post_json(url: str, body: bytes, deadline_s: float) -> int:
    """POST ``body`` to ``url`` and return the HTTP status, all within ``deadline_s``.

    A socket timeout bounds each read, not the request: a receiver that sends a byte
    every few seconds would hold the sender for as long as it likes. A timer shuts the
    socket at the deadline instead, whatever the request is waiting for.
    """
    parts = urllib.parse.urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname or "", parts.port, timeout=deadline_s)
    expired = threading.Event()
    sockets: list[socket.socket] = []
    timer = threading.Timer(deadline_s, _cut, (sockets, expired))
    timer.daemon = True
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    headers = {"Content-Type": "application/json", "User-Agent": "gpufleet"}
    status = 0
    timer.start()
    try:
        conn.connect()  # bounded by the timeout; the timer cannot cut what has no socket yet
        sockets.append(conn.sock)
        if expired.is_set():
            raise DeliveryError(f"no answer within {deadline_s:g} s")
        conn.request("POST", target, body, headers)
        reply = conn.getresponse()
        status = reply.status
        reply.read(REPLY_BYTES)
    except (OSError, http.client.HTTPException) as exc:
        if not 200 <= status < 300:  # an answer of 2xx took the alert, whatever came after
            why = f"HTTP {status}" if status else str(exc) or type(exc).__name__
            # The socket's own timeout and the timer are both deadline_s: whichever fires
            # first, the receiver did not answer in time.
            if (expired.is_set() or isinstance(exc, TimeoutError)) and not status:
                why = f"no answer within {deadline_s:g} s"
            raise DeliveryError(why) from exc
    finally:
        timer.cancel()
        conn.close()
    if not 200 <= status < 300:
        raise DeliveryError(f"HTTP {status}")
    return status


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
        self._listeners: list[AlertListener] = []
        self._receivers: dict[str, Callable[[Alert], None]] = {}
        if cfg.webhook:
            self._receivers["webhook"] = self._post
        if cfg.command:
            self._receivers["command"] = self._run_command
        self._outboxes: dict[str, queue.Queue[Alert | None]] = {}
        self._senders: dict[str, threading.Thread] = {}
        self._stopping = threading.Event()
        self._failed: deque[LogEntry] = deque(maxlen=1000)
        self._lock = threading.Lock()
        self.failures = 0  # webhook or command deliveries that failed (after retries)

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
        """Alert on the wanted, unacknowledged entries; returns the alerts sent.

        What the rate limit holds back in this batch goes out now as one storm alert.
        """
        sent = []
        held: list[LogEntry] = []
        for entry in entries:
            if not self.wants(entry) or self.acks.covering(entry.node, entry.gpu) is not None:
                continue
            alert, limited = self._admit(entry)
            if alert is not None:
                sent.append(alert)
                self._deliver(alert)
            elif limited:
                held.append(entry)
        if held:
            storm = storm_alert(held)
            sent.append(storm)
            self._deliver(storm)
        return sent

    def _admit(self, entry: LogEntry) -> tuple[Alert | None, bool]:
        """(the alert to send, or None; whether the rate limit is what held it back)."""
        now = self._clock()
        key = (entry.node, entry.gpu, entry.verdict or "")
        last = self._last_sent.get(key)
        if last is not None and now - last < self.cfg.repeat_after_s:
            return None, False  # the same alert, again: a flap, not news
        while self._sent_at and now - self._sent_at[0] >= 60.0:
            self._sent_at.popleft()
        self._last_sent[key] = now  # held back or not, the storm alert reports it
        if len(self._sent_at) >= self.cfg.max_per_minute:
            return None, True
        self._sent_at.append(now)
        return single_alert(entry), False

    def _deliver(self, alert: Alert) -> None:
        for listener in tuple(self._listeners):
            try:
                listener(alert)
            except Exception:
                log.exception("alert listener %r failed", listener)
        for name in self._receivers:
            self._outbox(name).put(alert)

    def _outbox(self, name: str) -> queue.Queue[Alert | None]:
        if name not in self._senders:
            box: queue.Queue[Alert | None] = queue.Queue()
            self._outboxes[name] = box
            thread = threading.Thread(
                target=self._send_forever, args=(name, box), name=f"gpufleet-alerts-{name}",
                daemon=True,
            )  # fmt: skip
            self._senders[name] = thread
            thread.start()
        return self._outboxes[name]

    def _send_forever(self, name: str, box: queue.Queue[Alert | None]) -> None:
        while (alert := box.get()) is not None:
            try:
                self._send_with_retries(name, alert)
            finally:
                box.task_done()
        box.task_done()

    def _send_with_retries(self, name: str, alert: Alert) -> None:
        attempts = self.cfg.retries + 1
        delay = self.cfg.retry_backoff_s
        for attempt in range(1, attempts + 1):
            try:
                self._receivers[name](alert)
                return
            except DeliveryError as exc:
                why = str(exc)
            if attempt == attempts or self._stopping.wait(delay):
                break
            delay = min(delay * 2, self.cfg.retry_backoff_max_s)
        with self._lock:
            self.failures += 1
            self._failed.append(failure_entry(name, alert, attempt, why, self._clock()))
        log.warning("alert %s failed after %d attempts: %s", name, attempt, why)

    def take_failures(self) -> list[LogEntry]:
        """Deliveries that failed for good since the last call, as event-log entries."""
        with self._lock:
            out = list(self._failed)
            self._failed.clear()
        return out

    def _post(self, alert: Alert) -> None:
        assert self.cfg.webhook is not None
        post_json(self.cfg.webhook, alert.to_json(), self.cfg.webhook_timeout_s)

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
            raise DeliveryError(str(exc)) from exc

    def drain(self, timeout_s: float = 10.0) -> bool:
        """Wait until every queued alert was sent (or failed); False on timeout."""
        deadline = time.monotonic() + timeout_s
        for box in tuple(self._outboxes.values()):
            while box.unfinished_tasks:
                if time.monotonic() > deadline:
                    return False
                with box.all_tasks_done:
                    box.all_tasks_done.wait(0.05)
        return True

    def close(self) -> None:
        """Stop the sender threads after what is queued (no more retry waits)."""
        self._stopping.set()
        for box in self._outboxes.values():
            box.put(None)
        bound = (self.cfg.webhook_timeout_s + self.cfg.command_timeout_s) * (self.cfg.retries + 1)
        for thread in self._senders.values():
            thread.join(timeout=bound)
        self._senders.clear()
        self._outboxes.clear()


def _reasons(entry: LogEntry) -> tuple[str, ...]:
    return tuple(r.strip() for r in entry.text.split(":", 1)[-1].split(";") if r.strip())


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def single_alert(entry: LogEntry) -> Alert:
    """The alert of one log entry."""
    return Alert(
        entry.node, entry.gpu, entry.verdict or "", _reasons(entry), _stamp(entry.t), entry.t,
        entry.kind, entry.text,
    )  # fmt: skip


def storm_alert(held: list[LogEntry]) -> Alert:
    """One alert for every entry the rate limit held back: the nodes by name, the count."""
    nodes = tuple(dict.fromkeys(e.node for e in held))
    named = nodes[:STORM_NAMES]
    more = f" and {len(nodes) - len(named)} more" if len(nodes) > len(named) else ""
    verdicts = ", ".join(sorted({e.verdict or "" for e in held}))
    text = (
        f"storm: {len(held)} more alerts ({verdicts}) on {len(nodes)} nodes: "
        f"{', '.join(named)}{more} (every one is in the event log)"
    )
    first = min(e.t for e in held)
    summary = (f"{len(held)} alerts on {len(nodes)} nodes",)
    return Alert(
        f"{len(nodes)} nodes", None, "storm", summary, _stamp(first), first, "storm", text,
        suppressed_before=len(held), nodes=named, count=len(held),
    )  # fmt: skip


def failure_entry(receiver: str, alert: Alert, attempts: int, why: str, t: float) -> LogEntry:
    """A delivery that failed for good, as the event log shows it."""
    tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
    text = f"alert {receiver} failed after {tries}: {why} ({alert.text})"
    node = "fleet" if alert.kind == "storm" else alert.node
    return LogEntry(t, node, "alert_failed", text[:500], "warn", alert.gpu)
