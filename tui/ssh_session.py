"""`S`: the ssh session run while the dashboard is suspended.

While the app is suspended the terminal is back in cooked mode, so ctrl+c sends SIGINT
to the whole foreground process group: ssh *and* the dashboard, which would die with a
traceback instead of coming back. The dashboard ignores SIGINT for the session's length
with a Python handler (reset to the default in the child by exec, so ctrl+c still stops
ssh). A line says what runs and how to come back: a node without a shell (the demo's)
would otherwise leave a blank screen.
"""

from __future__ import annotations

import shlex
import signal
import subprocess
import threading
from collections.abc import Sequence
from types import FrameType

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


def _ignore(_signum: int, _frame: FrameType | None) -> None:
    """SIGINT while ssh runs is the session's, not the dashboard's."""


def run_session(argv: Sequence[str], node: str) -> int:
    """Run ``argv`` (an argument list, no shell) on the terminal; its exit status."""
    print(banner(argv, node), flush=True)
    if threading.current_thread() is not threading.main_thread():
        return subprocess.run(list(argv), check=False).returncode  # signals are main's
    previous = signal.signal(signal.SIGINT, _ignore)
    try:
        return subprocess.run(list(argv), check=False).returncode
    finally:
        # None: a handler not set from Python; Python's own is the one to go back to.
        signal.signal(
            signal.SIGINT, previous if previous is not None else signal.default_int_handler
        )
