"""``gpufleet watch`` on a pseudo-terminal, for bench/bench_fleet.py.

The dashboard runs as an operator runs it: a 200x50 terminal (``TIOCSWINSZ`` on a
pty), ``TERM=xterm-256color``, its output read and thrown away by a thread as a
terminal emulator would consume it (an unread pty would block the app's writes).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import struct
import subprocess
import termios
import threading
from collections.abc import Sequence
from pathlib import Path

COLUMNS, ROWS = 200, 50


TAIL_BYTES = 4096  # kept for the error message when the dashboard exits early


class Terminal:
    """A pty of ``COLUMNS`` x ``ROWS`` whose output is drained and counted."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        size = struct.pack("HHHH", ROWS, COLUMNS, 0, 0)
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, size)
        self.bytes_out = 0
        self.tail = b""
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return  # the slave side closed: the app exited
            if not chunk:
                return
            self.bytes_out += len(chunk)
            self.tail = (self.tail + chunk)[-TAIL_BYTES:]

    def start(self, argv: Sequence[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
        """Start ``argv`` with the pty as its controlling terminal and standard streams.

        util-linux's ``setsid --ctty`` makes the pty the session's controlling terminal
        (``start_new_session`` alone gave the app none), so when the bench's side of it
        closes the kernel hangs the app up, as when a terminal emulator exits. Without
        it a bench killed mid-run left the app behind, its input thread spinning on the
        dead terminal at a whole core, under every run that followed.
        """
        env = {**env, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
        process = subprocess.Popen(
            ["setsid", "--ctty", *argv],
            env=env,
            cwd=cwd,
            stdin=self.slave,
            stdout=self.slave,
            stderr=self.slave,
        )
        os.close(self.slave)  # the child holds it; EOF on the master when the child exits
        return process

    def close(self) -> None:
        """Close the master side (after the child exited)."""
        with contextlib.suppress(OSError):
            os.close(self.master)
