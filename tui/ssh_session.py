"""`S`: the ssh session, run beside the monitor while the dashboard's screen is suspended.

The session runs on a thread and the dashboard's event loop goes on: collection, ticks,
history, alerts and /metrics do not stop while the operator is on a node (run on the
loop itself, a session left the whole fleet unwatched for as long as it lasted).

ssh runs in a process group of its own, made the terminal's foreground group by the
child itself before ssh starts (as a shell's job control does): ctrl+c (and ctrl+z,
ctrl+\\) then reach ssh only. In the dashboard's group, they also reached every child
of the dashboard, the demo's simulated agents among them, which then said goodbye and
looked like an outage. A line says what runs and how to come back: a node without a
shell would otherwise leave a blank screen.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence

from tui.terminal_notify import printable

BANNER_CHARS = 400


def banner(argv: Sequence[str], node: str) -> str:
    """What the terminal shows before ssh starts (printable text only)."""
    command = printable(shlex.join(argv), BANNER_CHARS)
    return (
        f"gpufleet: {printable(node, 80)}: {command}\n"
        "gpufleet: the dashboard comes back when this session ends "
        "(exit or ctrl+d; ctrl+c stops ssh, not gpufleet)"
    )


def controlling_terminal() -> int | None:
    """The descriptor of the terminal the dashboard runs on; None without one."""
    try:
        fd = sys.__stdin__.fileno() if sys.__stdin__ is not None else -1
    except (OSError, ValueError):
        return None
    return fd if fd >= 0 and os.isatty(fd) else None


# Run first in the child: it takes the terminal's foreground, then becomes ssh. Done in
# the child before ssh starts, a ctrl+c pressed (or a byte read) at once cannot reach the
# dashboard's group; from the parent, after the start, it raced the child.
TAKE_TERMINAL = """\
import os, signal, sys
os.setpgid(0, 0)
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
try:
    os.tcsetpgrp(0, os.getpgrp())
except OSError:
    pass
signal.signal(signal.SIGTTOU, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])
"""


@contextlib.contextmanager
def terminal_back(terminal: int | None) -> Iterator[None]:
    """Give the terminal back to the dashboard's group on exit.

    The dashboard is a background group meanwhile: taking the terminal back from there
    raises SIGTTOU unless the calling thread blocks it, so this thread does.
    """
    own = os.getpgrp()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        yield
    finally:
        if terminal is not None:
            with contextlib.suppress(OSError):  # the terminal went away: nothing to give back
                os.tcsetpgrp(terminal, own)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def run_session(argv: Sequence[str], node: str) -> int:
    """Run ``argv`` (an argument list, no shell) on the terminal; its exit status.

    Blocks until the session ends: call it on a thread, never on the event loop.
    """
    print(banner(argv, node), flush=True)
    with terminal_back(controlling_terminal()):
        child = subprocess.Popen([sys.executable, "-I", "-c", TAKE_TERMINAL, *argv])
        try:
            return _wait_running(child)
        finally:
            if child.poll() is None:  # the wait was interrupted: no orphan ssh on the terminal
                child.kill()
                child.wait()


def _resume(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGCONT)


def _wait_running(child: subprocess.Popen[bytes]) -> int:
    """The exit status; a stop (ctrl+z) is resumed at once: the dashboard has no job
    control to come back to, and a stopped ssh would hold the terminal for good."""
    while True:
        _pid, status = os.waitpid(child.pid, os.WUNTRACED)
        if os.WIFSTOPPED(status):
            _resume(child.pid)
            continue
        child.returncode = os.waitstatus_to_exitcode(status)
        return child.returncode
