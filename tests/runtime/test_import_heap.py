"""Importing the application runs no full collection, and the command line freezes
what the imports built (gpufleet.imports_done)."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh interpreter: the test process has imported everything long ago.
PROGRAM = """
import contextlib, gc, io, json
full = []
def seen(phase, info):
    if phase == "start" and info["generation"] == 2:
        full.append(1)
gc.callbacks.append(seen)
import gpufleet.cli, gpufleet.commands.serve, gpufleet.runtime
imported = len(full)
with contextlib.redirect_stdout(io.StringIO()):
    status = gpufleet.cli.main(["help"])  # a command that returns at once
figures = {"status": status, "full_during_imports": imported}
figures.update(frozen=gc.get_freeze_count(), threshold=gc.get_threshold())
print(json.dumps(figures))
"""


def test_imports_run_no_full_collection_and_are_frozen_after() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, check=True
    )
    figures = json.loads(done.stdout)
    assert figures["status"] == 0
    # CPython's automatic trigger ran one (21-47 ms) while the serve path was imported.
    assert figures["full_during_imports"] == 0
    assert figures["frozen"] > 50_000  # modules, classes and functions, out of every scan
    assert figures["threshold"] == list(gc_defaults())


def gc_defaults() -> tuple[int, int, int]:
    """CPython's own thresholds, which every command runs under once imported."""
    done = subprocess.run(
        [sys.executable, "-c", "import gc; print(*gc.get_threshold())"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    young, middle, old = map(int, done.stdout.split())
    return young, middle, old
