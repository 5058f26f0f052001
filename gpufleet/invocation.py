"""How to run this very gpufleet again, for commands that gpufleet prints for the user.

``make demo`` installs into ``.venv/bin``, which is seldom on ``PATH``: a printed
``gpufleet sla ...`` would then fail with "command not found". The path of the
executable actually running works wherever the user pastes it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path


def gpufleet_command() -> str:
    """The running ``gpufleet`` as a shell word (or ``python -m gpufleet`` when run so)."""
    argv0 = sys.argv[0] if sys.argv else ""
    found = argv0 if os.sep in argv0 else shutil.which(argv0) if argv0 else None
    if found and Path(found).name.startswith("gpufleet") and Path(found).is_file():
        return shlex.quote(str(Path(found).absolute()))
    # `python -m gpufleet`, or gpufleet's main() called from another program (a test).
    return f"{shlex.quote(sys.executable)} -m gpufleet"


def command_line(*args: str | os.PathLike[str], extra: Sequence[str] = ()) -> str:
    """``gpufleet ARGS...`` with every argument quoted for a POSIX shell."""
    words = [shlex.quote(os.fspath(a)) for a in (*args, *extra)]
    return " ".join((gpufleet_command(), *words))
