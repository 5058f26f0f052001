"""One recorder per data directory: an advisory ``flock`` on ``recorder.lock``.

The lock dies with its process (even under SIGKILL), so a stale lock file never
blocks a restart. The file names the holder so a second process can say who it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

from fleet.history.layout import LOCK_FILE


class RecorderLock:
    """The exclusive right to record into ``data_dir``."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock without waiting; False when another recorder holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {started}\n".encode())
        self._fd = fd
        return True

    def holder(self) -> str:
        """Who holds the lock, as its holder wrote it (empty if unknown)."""
        with contextlib.suppress(OSError):
            return self.path.read_text(encoding="utf-8").strip()
        return ""

    def release(self) -> None:
        """Give the lock up (the file stays; only the lock matters)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
