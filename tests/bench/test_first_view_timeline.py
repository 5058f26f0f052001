"""The start-up timeline: each step's first, median and last node, and the CPU at the last."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from types import ModuleType

_LIB = Path(__file__).resolve().parents[2] / "bench" / "lib" / "first_view.py"


def _first_view() -> ModuleType:
    spec = importlib.util.spec_from_file_location("first_view_under_test", _LIB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


first_view = _first_view()


def test_the_process_started_before_now_and_after_boot() -> None:
    started = first_view.process_started_at()
    assert started <= time.time()
    assert first_view.cpu_of(os.getpid()) is not None


def test_a_step_is_complete_when_every_started_node_reached_it() -> None:
    timeline = first_view.Timeline()
    for name in ("a", "b", "c"):
        timeline.note("task", name)
    timeline.note("connected", "a")
    timeline.note("connected", "b")
    timeline.note("connected", "a")  # a node's second connection is not a new arrival
    assert "connected" not in timeline.last
    timeline.note("connected", "c")
    assert "connected" in timeline.last
    report = timeline.report()
    steps = report["steps"]
    assert steps["connected"]["nodes"] == 3
    assert steps["connected"]["first"] <= steps["connected"]["p50"] <= steps["connected"]["last"]
    assert "hello" not in steps
    assert report["full_view"] is None


def test_the_full_view_is_the_first_snapshot_with_every_node_streaming() -> None:
    timeline = first_view.Timeline()
    timeline.note("task", "a")
    timeline.note("task", "b")
    timeline.on_snapshot(1)
    assert timeline.full_view is None
    timeline.on_snapshot(2)
    first = timeline.full_view
    assert first is not None
    timeline.on_snapshot(2)
    assert timeline.full_view == first
