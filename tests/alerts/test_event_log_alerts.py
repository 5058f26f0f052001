"""The event log (history + session) and alerts: webhook to a real local HTTP server,
command hook, rate limit, deduplication and acknowledgements."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fleet.alerts import Acknowledgements, AlertDispatcher
from fleet.desk import OperatorDesk
from fleet.event_log import LogEntry, SessionLog, merge_log
from fleet.model import EventRecord, FleetSnapshot, NodeTransition
from fleet.settings.alerts_section import AlertsSection
from history import HistoryRecorder
from history.desk_log import DeskHistory, read_history_log
from history.section import HistorySection
from testkit.snapshots import T0, demo_snapshot, lose_gpu, probe_flag


def broken_tick(t: float = T0 + 60) -> tuple[FleetSnapshot, FleetSnapshot]:
    """A healthy fleet, then the same fleet with node-0003's GPU 5 lost (XID 79)."""
    healthy = demo_snapshot(4, faults=False)
    node = lose_gpu(healthy.nodes[2], 5, t)
    xid = EventRecord(t, node.name, "xid", 5, node.gpus[5].uuid, 79, "GPU has fallen off the bus")
    return healthy, replace(
        healthy,
        taken_at=t,
        nodes=(*healthy.nodes[:2], node, healthy.nodes[3]),
        transitions=(NodeTransition(node.name, "broken", t, ("GPU 5 lost (XID 79)",)),),
        new_events=(xid,),
    )


def test_session_log_records_transitions_events_gpu_verdicts_and_probes() -> None:
    healthy, broken = broken_tick()
    log = SessionLog()
    assert log.observe(healthy) == []  # nothing to compare the first snapshot with
    entries = log.observe(broken)
    kinds = {(e.kind, e.gpu) for e in entries}
    assert ("broken", None) in kinds and ("xid", 5) in kinds and ("gpu", 5) in kinds
    gpu = next(e for e in entries if e.kind == "gpu")
    assert gpu.verdict == "lost" and gpu.severity == "bad"
    nodes = (probe_flag(broken.nodes[0], 7, "slow"), *broken.nodes[1:])
    flagged = replace(broken, taken_at=T0 + 120, transitions=(), new_events=(), nodes=nodes)
    probe = log.observe(flagged)
    assert [(e.kind, e.gpu, e.verdict) for e in probe] == [("probe", 7, "slow")]
    assert [e.kind for e in log.since(T0 + 100)] == ["probe"]


def test_history_log_survives_a_restart(tmp_path: Path) -> None:
    healthy, broken = broken_tick()
    recorder = HistoryRecorder(tmp_path, HistorySection(), clock=lambda: T0 + 60)
    recorder.record(healthy)
    recorder.record(broken)
    recorder.close()
    # A new process: nothing in its session, everything from history.
    desk = OperatorDesk(data_dir=tmp_path, clock=lambda: T0 + 300, history=DeskHistory(tmp_path))
    entries = desk.event_log(3_600)
    texts = [e.text for e in entries]
    assert any(e.kind == "broken" and "GPU 5 lost" in e.text for e in entries), texts
    assert any(e.kind == "xid" and "79" in e.text for e in entries), texts
    assert entries == sorted(entries, key=lambda e: e.t, reverse=True)
    assert read_history_log(tmp_path, T0 + 200, T0 + 300) == []  # outside the window


def test_merge_shows_an_entry_in_both_sources_once() -> None:
    a = LogEntry(T0, "n1", "broken", "node broken: x", "bad", verdict="broken")
    b = LogEntry(T0 + 1, "n1", "up", "node up", "good", verdict="up")
    assert merge_log([a], [a, b]) == [b, a]


class Hook(BaseHTTPRequestHandler):
    received: list[dict[str, object]]

    def do_POST(self) -> None:  # the http.server API
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        self.server.received.append(body)  # type: ignore[attr-defined]
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, object]]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host!s}:{port}/hook", server.received  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def entry(node: str, gpu: int | None, verdict: str, t: float = T0) -> LogEntry:
    kind = "gpu" if gpu is not None else verdict
    text = f"GPU {gpu} {verdict}: XID 79" if gpu is not None else f"node {verdict}: reasons"
    return LogEntry(t, node, kind, text, "bad", gpu, verdict)


def test_webhook_posts_json_to_a_real_server_deduplicated(
    webhook: tuple[str, list[dict[str, object]]],
) -> None:
    url, received = webhook
    now = [T0]
    dispatcher = AlertDispatcher(
        AlertsSection(webhook=url, repeat_after_s=600), Acknowledgements(None), lambda: now[0]
    )
    try:
        sent = dispatcher.observe([entry("node-0003", 5, "lost"), entry("node-0003", 5, "lost")])
        assert len(sent) == 1  # the same alert twice in one go: once
        now[0] += 60
        assert dispatcher.observe([entry("node-0003", 5, "lost")]) == []  # a flap: not news
        assert dispatcher.observe([entry("node-0003", None, "up")]) == []  # not alerting
        now[0] += 600
        assert len(dispatcher.observe([entry("node-0003", 5, "lost")])) == 1  # old enough
        assert dispatcher.drain()
    finally:
        dispatcher.close()
    assert len(received) == 2 and dispatcher.failures == 0
    body = received[0]
    assert body["node"] == "node-0003" and body["gpu"] == 5 and body["verdict"] == "lost"
    assert body["reasons"] == ["XID 79"] and str(body["time"]).endswith("+00:00")


def test_rate_limit_sends_what_it_holds_back_as_one_storm_alert_at_once(
    webhook: tuple[str, list[dict[str, object]]],
) -> None:
    url, received = webhook
    now = [T0]
    cfg = AlertsSection(webhook=url, max_per_minute=3, on=("broken",))
    dispatcher = AlertDispatcher(cfg, Acknowledgements(None), lambda: now[0])
    try:
        storm = [entry(f"node-{i:04d}", None, "broken") for i in range(10)]
        sent = dispatcher.observe(storm)
        assert [a.kind for a in sent] == ["broken"] * 3 + ["storm"]
        assert sent[-1].count == 7 and sent[-1].nodes == tuple(
            f"node-{i:04d}" for i in range(3, 10)
        )
        now[0] += 61
        later = dispatcher.observe([entry("node-0100", None, "broken")])
        assert later[0].suppressed_before == 0  # nothing waits for a later alert
        assert dispatcher.drain()
    finally:
        dispatcher.close()
    assert len(received) == 5 and received[3]["count"] == 7


def test_acknowledged_nodes_and_gpus_do_not_alert_and_acks_persist(tmp_path: Path) -> None:
    acks = Acknowledgements(tmp_path / "acks.json")
    acks.add("node-0003", None, "ticket 4711", T0)
    acks.add("node-0007", 2, "swap booked", T0)
    dispatcher = AlertDispatcher(AlertsSection(), Acknowledgements(tmp_path / "acks.json"))
    sent = dispatcher.observe(
        [
            entry("node-0003", 5, "lost"),
            entry("node-0003", None, "broken"),
            entry("node-0007", 2, "fail"),
            entry("node-0007", 3, "fail"),
        ]
    )
    assert [(a.node, a.gpu) for a in sent] == [("node-0007", 3)]
    again = Acknowledgements(tmp_path / "acks.json")
    held = again.covering("node-0003", 1)
    assert held is not None and held.note == "ticket 4711"
    assert again.remove("node-0003", None) and again.covering("node-0003", 1) is None


def test_command_hook_gets_the_alert_json_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "alerts.jsonl"
    script = "import sys; open(sys.argv[1], 'ab').write(sys.stdin.buffer.read() + b'\\n')"
    cfg = AlertsSection(command=(sys.executable, "-c", script, str(out)))
    dispatcher = AlertDispatcher(cfg, Acknowledgements(None))
    try:
        dispatcher.observe([entry("node-0005", None, "broken")])
        assert dispatcher.drain()
    finally:
        dispatcher.close()
    body = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert body["node"] == "node-0005" and body["verdict"] == "broken"
    assert dispatcher.failures == 0


def test_probe_findings_alert_only_when_they_flag() -> None:
    dispatcher = AlertDispatcher(AlertsSection(), Acknowledgements(None))
    slow = LogEntry(T0, "node-0006", "probe", "GPU 7: probe slow", "warn", 7, "slow")
    passed = LogEntry(T0, "node-0006", "probe", "GPU 6: probe pass", "good", 6, "pass")
    assert [a.gpu for a in dispatcher.observe([slow, passed])] == [7]


def test_bad_alert_config_names_the_key() -> None:
    with pytest.raises(ValueError, match="webhook"):
        AlertsSection(webhook="ftp://example")  # type: ignore[call-arg]
