"""Where a report command's text goes: standard output, or a file written whole."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def emit(command: str, text: str, output: Path | None) -> None:
    """Write ``text`` to ``output`` (renamed into place, so a reader never sees half a
    report) and say so on standard error; without ``output``, to standard output."""
    if output is None:
        sys.stdout.write(text)
        return
    tmp = output.with_name(f".tmp-{output.name}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, output)
    print(f"gpufleet {command}: wrote {output}", file=sys.stderr)


def fail(command: str, message: str) -> int:
    """Print ``message`` as ``command``'s error; the exit status for bad input."""
    print(f"gpufleet {command}: {message}", file=sys.stderr)
    return 2
