"""`S` on a real terminal: a banner says how to come back, and ctrl+c ends ssh only."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

from tests.tui.test_tui_notify import run_in_pty
from tui.ssh_session import banner


def test_ctrl_c_in_the_ssh_session_leaves_the_dashboard_running(tmp_path: Path) -> None:
    written = run_in_pty([sys.executable, "-m", "tests.tui.ssh_app", str(tmp_path)])
    text = written.decode(errors="replace")
    assert "gpufleet: node-0001: " in text and "ctrl+c stops ssh, not gpufleet" in text
    assert "stand-in shell on node-0001" in text and "stand-in stopped by ctrl+c" in text
    assert "KeyboardInterrupt" not in text, text[-3000:]
    assert "dashboard resumed after the ssh session" in text, text[-3000:]


def test_the_banner_keeps_printable_text_only() -> None:
    line = banner(["ssh", "--", "node\x1b]0;x\x07"], "node\x1b[2J")
    assert "\x1b" not in line and "\x07" not in line
    assert line.startswith("gpufleet: node [2J: ssh -- ")


def test_the_fleet_is_monitored_through_a_10_s_ssh_session(tmp_path: Path) -> None:
    written = run_in_pty([sys.executable, "-m", "tests.tui.ssh_monitor_app", str(tmp_path)])
    text = written.decode(errors="replace")
    assert "RESULT " in text, text[-3000:]
    result = json.loads(text[text.index("RESULT ") + 7 :].split("\n")[0])
    session = result["session"]
    start, end = session["start"], session["end"]
    assert end - start >= 10.0
    # ctrl+c reached the session; the dashboard and its simulated agents were not in its
    # group: no agent said goodbye, every node still streams.
    assert session["ctrl_c_reached_session"]
    assert not [t for t in result["event_log"] if "SIGINT" in t], result["event_log"]
    assert set(result["statuses"].values()) == {"streaming"}, result["statuses"]
    # /metrics answered every scrape of the session and served new snapshots through it.
    assert session["unanswered"] == 0
    assert len(session["taken"]) >= 5, session["taken"]
    # Ticks went on: none late by the watchdog's own measure, across the whole session.
    during = [t for t in result["ticks"] if start <= t <= end]
    assert len(during) >= 5, (during, start, end)
    around = [t for t in result["ticks"] if start - 5 <= t <= end + 5]
    gaps = [b - a for a, b in itertools.pairwise(around)]
    assert max(gaps) < result["stall_threshold_s"], gaps
    assert result["stalls"] == []
