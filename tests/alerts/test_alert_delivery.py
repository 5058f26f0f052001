"""Alerts that arrive: a storm as one alert when it happens, retries with a bound, the
failure in the event log, a total deadline per webhook request (a real receiver on
loopback that drips its answer), and a slow webhook that never holds the command hook."""

from __future__ import annotations

import json
import os
import select
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fleet.alerts import Acknowledgements, AlertDispatcher
from fleet.desk import OperatorDesk
from fleet.event_log import LogEntry
from fleet.settings.alerts_section import AlertsSection
from testkit.snapshots import T0
from tests.alerts.test_event_log_alerts import broken_tick

WAIT_S = 30.0  # a bound on a wait that a working sender ends long before: a hang fails


def entry(node: str, gpu: int | None = 5, verdict: str = "lost") -> LogEntry:
    return LogEntry(T0, node, "gpu", f"GPU {gpu} {verdict}: XID 79", "bad", gpu, verdict)


class Receiver(BaseHTTPRequestHandler):
    """Answers each POST with the next status of ``server.statuses`` (then 204)."""

    def do_POST(self) -> None:  # the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server: Any = self.server
        with server.lock:
            server.received.append(body)
            status = server.statuses.pop(0) if server.statuses else 204
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class Dripper(BaseHTTPRequestHandler):
    """Sends 200 and its headers at once, then its body a byte at a time until cut off."""

    def do_POST(self) -> None:  # the http.server API
        self.rfile.read(int(self.headers["Content-Length"]))
        server: Any = self.server
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.wfile.flush()
        server.headers_sent.set()
        try:
            for _ in range(100000):  # 100,000 bytes at one per release: never ends alone
                server.release.wait(0.05)
                self.wfile.write(b"x")
                self.wfile.flush()
        except OSError:
            server.cut.set()  # the client hung up on the drip

    def log_message(self, format: str, *args: object) -> None:
        pass


class Silent(BaseHTTPRequestHandler):
    """Reads the request and never answers (until the test ends)."""

    def do_POST(self) -> None:  # the http.server API
        self.rfile.read(int(self.headers["Content-Length"]))
        server: Any = self.server
        server.release.wait(WAIT_S)

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(handler: type[BaseHTTPRequestHandler], **attrs: Any) -> Iterator[Any]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.lock = threading.Lock()
    for name, value in attrs.items():
        setattr(server, name, value)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    server.url = f"http://{host!s}:{port}/hook"
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def receiver() -> Iterator[Any]:
    yield from serve(Receiver, received=[], statuses=[])


@pytest.fixture
def dripper() -> Iterator[Any]:
    yield from serve(
        Dripper, headers_sent=threading.Event(), release=threading.Event(), cut=threading.Event()
    )


def test_a_storm_of_100_nodes_is_sent_at_once_naming_every_node(receiver: Any) -> None:
    dispatcher = AlertDispatcher(AlertsSection(webhook=receiver.url), Acknowledgements(None))
    try:
        sent = dispatcher.observe([entry(f"node-{i:03d}") for i in range(100)])
        assert dispatcher.drain(WAIT_S)
    finally:
        dispatcher.close()
    assert len(sent) == 21 and len(receiver.received) == 21  # 20 alone, then one storm
    storm = receiver.received[-1]
    assert storm["kind"] == "storm" and storm["count"] == 80
    assert storm["nodes"] == [f"node-{i:03d}" for i in range(20, 100)]
    assert "80 more alerts (lost) on 80 nodes: node-020, node-021" in storm["text"]
    assert "event log" in storm["text"]


def test_an_http_500_is_retried_and_then_delivered(receiver: Any) -> None:
    receiver.statuses = [500, 500]
    cfg = AlertsSection(webhook=receiver.url, retries=3, retry_backoff_s=0.01)
    dispatcher = AlertDispatcher(cfg, Acknowledgements(None))
    try:
        dispatcher.observe([entry("node-007")])
        assert dispatcher.drain(WAIT_S)
    finally:
        dispatcher.close()
    assert len(receiver.received) == 3  # two refusals, then taken
    assert dispatcher.failures == 0 and dispatcher.take_failures() == []


def test_a_delivery_that_keeps_failing_stops_at_the_bound_and_is_logged(receiver: Any) -> None:
    receiver.statuses = [500] * 10
    cfg = AlertsSection(webhook=receiver.url, retries=2, retry_backoff_s=0.01)
    dispatcher = AlertDispatcher(cfg, Acknowledgements(None))
    try:
        dispatcher.observe([entry("node-007")])
        assert dispatcher.drain(WAIT_S)
    finally:
        dispatcher.close()
    assert len(receiver.received) == 3  # the first try and two retries, no more
    (failed,) = dispatcher.take_failures()
    assert failed.node == "node-007" and failed.kind == "alert_failed"
    assert failed.text.startswith("alert webhook failed after 3 attempts: HTTP 500")
    assert dispatcher.take_failures() == []  # handed over once


def fifo_lines(path: Path, count: int) -> list[bytes]:
    """The first ``count`` lines written to the FIFO ``path`` by successive writers, read
    through one open end so none is lost between them (a hang is bounded by WAIT_S)."""
    # Opened for writing too (Linux allows it on a FIFO): with a writer always there, a
    # hook closing its end is no end of file and select wakes only for data. Read only,
    # select woke on the hang-up between two writers, and the read then found the next
    # writer's end open and empty (EAGAIN).
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    try:
        data = b""
        while data.count(b"\n") < count:
            ready, _, _ = select.select([fd], [], [], WAIT_S)
            assert ready, "the command hook did not run"
            data += os.read(fd, 65536)
        return data.splitlines()
    finally:
        os.close(fd)


def test_a_dripping_webhook_is_cut_at_its_deadline_and_never_holds_the_command_hook(
    dripper: Any, tmp_path: Path
) -> None:
    fifo = tmp_path / "command.fifo"
    os.mkfifo(fifo)
    script = "import sys; open(sys.argv[1], 'wb').write(sys.stdin.buffer.read() + b'\\n')"
    cfg = AlertsSection(
        webhook=dripper.url,
        webhook_timeout_s=0.5,
        command=(sys.executable, "-c", script, str(fifo)),
    )
    dispatcher = AlertDispatcher(cfg, Acknowledgements(None))
    try:
        dispatcher.observe([entry("node-001"), entry("node-002")])
        assert dripper.headers_sent.wait(WAIT_S)
        # The webhook is mid-drip on node-001: both command hooks run anyway.
        lines = fifo_lines(fifo, 2)
        assert [json.loads(line)["node"] for line in lines] == ["node-001", "node-002"]
        # The drip would last 100,000 x 50 ms; the deadline hangs up on it.
        assert dripper.cut.wait(WAIT_S)
        assert dispatcher.drain(WAIT_S)
    finally:
        dripper.release.set()
        dispatcher.close()
    # The answer began with 200 and its headers: the alert was taken, not retried.
    assert dispatcher.failures == 0


def test_a_receiver_that_never_answers_fails_at_the_deadline_and_is_logged() -> None:
    for server in serve(Silent, release=threading.Event()):
        cfg = AlertsSection(webhook=server.url, webhook_timeout_s=0.3, retries=0)
        dispatcher = AlertDispatcher(cfg, Acknowledgements(None))
        try:
            dispatcher.observe([entry("node-009")])
            assert dispatcher.drain(WAIT_S)
        finally:
            server.release.set()
            dispatcher.close()
        (failed,) = dispatcher.take_failures()
        assert failed.text.startswith(
            "alert webhook failed after 1 attempt: no answer within 0.3 s"
        )


def test_the_desk_puts_a_failed_delivery_in_the_event_log(receiver: Any) -> None:
    receiver.statuses = [500, 500, 500, 500]
    cfg = AlertsSection(webhook=receiver.url, retries=1, retry_backoff_s=0.01)
    healthy, broken = broken_tick()
    desk = OperatorDesk(cfg, clock=lambda: broken.taken_at + 1)
    try:
        desk.observe(healthy)
        desk.observe(broken)  # node-0003 broken: an alert, refused twice
        assert desk.alerts.drain(WAIT_S)
        desk.observe(replace(broken, taken_at=broken.taken_at + 1, transitions=(), new_events=()))
        log = desk.event_log(3600)
    finally:
        desk.close()
    failed = [e for e in log if e.kind == "alert_failed"]
    assert failed and {e.node for e in failed} == {"node-0003"}, [e.text for e in log]
    assert all("failed after 2 attempts: HTTP 500" in e.text for e in failed)
