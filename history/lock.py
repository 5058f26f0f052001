"""One recorder per data directory: an advisory ``flock`` plus a heartbeat.

The lock dies with its process (even under SIGKILL), so a stale lock file never
blocks a restart, and a standby controller that keeps trying takes over within a
second or so of the recorder's death. The lock file names the holder so a second
process can say who it is.

The heartbeat file (``recorder.heartbeat``, rewritten at every flush) says that the
holder is not only alive but recording: a report calls an interval "ongoing" only
while the lock is held *and* the heartbeat is fresh. A SIGSTOPped recorder holds its
lock but its heartbeat ages; it is not preempted (two recorders would then write
the same intervals), and when it resumes it records its stall as unmonitored.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from history.layout import HEARTBEAT_FILE, LOCK_FILE, TMP_PREFIX


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

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

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


def lock_is_held(data_dir: Path) -> bool:
    """Whether some recorder (this process included) holds ``data_dir``'s lock now.

    Asks with a shared, non-blocking ``flock`` that is dropped at once: it conflicts
    with a holder's exclusive lock and with nothing else for longer than a moment.
    """
    try:
        fd = os.open(data_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the shared lock if it was taken
    return False


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """The recorder's latest sign of life."""

    session: str
    pid: int
    host: str
    at: float  # wall time of the recorder's latest flush


def write_heartbeat(data_dir: Path, session: str, at: float) -> None:
    """Say that ``session`` was recording at ``at`` (temporary file and rename, no fsync:
    a heartbeat lost in a crash is exactly what a crash means)."""
    body = {"session": session, "pid": os.getpid(), "host": socket.gethostname(), "at": at}
    tmp = data_dir / f"{TMP_PREFIX}{HEARTBEAT_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(body), encoding="utf-8")
    os.replace(tmp, data_dir / HEARTBEAT_FILE)


def read_heartbeat(data_dir: Path) -> Heartbeat | None:
    """The latest heartbeat, or None (never written, unreadable, or a version-1 directory)."""
    try:
        body = json.loads((data_dir / HEARTBEAT_FILE).read_text(encoding="utf-8"))
        return Heartbeat(
            str(body["session"]), int(body["pid"]), str(body["host"]), float(body["at"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def live_recorder(data_dir: Path, now: float, fresh_s: float) -> Heartbeat | None:
    """The recorder observing ``data_dir`` right now: lock held, heartbeat at most
    ``fresh_s`` old. None when nobody records (its open intervals then end where its
    observation ended)."""
    beat = read_heartbeat(data_dir)
    if beat is None or not 0 <= now - beat.at <= fresh_s or not lock_is_held(data_dir):
        return None
    return beat
