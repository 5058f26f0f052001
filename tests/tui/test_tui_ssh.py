"""`S` on a real terminal: a banner says how to come back, and ctrl+c ends ssh only."""

from __future__ import annotations

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
