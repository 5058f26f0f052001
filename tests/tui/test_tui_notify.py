"""``[alerts] notify = true``: the bytes a dashboard on a real terminal writes on an alert."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tui.terminal_notify import notification, printable

ROOT = Path(__file__).resolve().parents[2]


def _take_controlling_terminal() -> None:
    """As a login on a terminal: the pty is the new session's controlling terminal, so
    job control (foreground groups, ctrl+c to the foreground group only) works on it."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def run_in_pty(args: list[str], within_s: float = 120.0) -> bytes:
    """Run ``args`` on a new 120x40 pseudo-terminal; everything it wrote, once it exits."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        args,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=ROOT,
        env=env,
        start_new_session=True,
        preexec_fn=_take_controlling_terminal,
    )
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + within_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        proc.wait(timeout=30)
    finally:
        proc.kill()
        os.close(master)
    return bytes(out)


def test_an_alert_writes_osc9_and_osc777_beside_the_bell(tmp_path: Path) -> None:
    written = run_in_pty([sys.executable, "-m", "tests.tui.notify_app", str(tmp_path)])
    osc9 = written.find(b"\x1b]9;gpufleet: Alert node-0003")
    osc777 = written.find(b"\x1b]777;notify;gpufleet: Alert node-0003")
    assert osc9 >= 0 and osc777 > osc9, written[-2000:]
    assert b"\x07" in written[:osc9], "the bell rings too"
    # The hostile node name's BEL and ESC became spaces: each sequence ends at its own BEL.
    body9 = written[osc9 + 2 : written.index(b"\x07", osc9)]
    body777 = written[osc777 + 2 : written.index(b"\x07", osc777)]
    for body in (body9, body777):
        assert b"\x1b" not in body and b"pwned" in body
    assert b"GPU 5 lost" in body9
    assert body777.count(b";") == 3  # 777;notify;title;body: the title has no ';'


def test_the_sequences_keep_printable_text_only() -> None:
    seq = notification("Alert a;b", "x\x1b]52;c;AAAA\x07y\u202ez\n" + "w" * 500)
    assert seq.count("\x07") == 2 and seq.count("\x1b") == 2
    assert seq.startswith("\x1b]9;gpufleet: Alert a,b: x ]52;c;AAAA y z ")
    assert "\x1b]777;notify;gpufleet: Alert a,b;x ]52" in seq
    assert len(printable("w" * 500, 240)) == 240
