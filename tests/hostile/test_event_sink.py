"""The events sink serves the whole fleet: one bad record never costs the others.

The decoder already refuses these values; the records here are built by hand to show
the sink holds on its own (a second line of defence, and the one the issue hit).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import polars as pl
import pytest

from fleet.model import EventRecord, FleetSnapshot
from gpufleet.config import parse_config
from history import events as event_rows
from history.recorder import HistoryRecorder

NOW = time.time()
GOOD = EventRecord(NOW, "gpu-001", "xid", 2, "GPU-1-2", 48, "XID 48: double-bit ECC error")


def bad_records(prefix: str) -> list[EventRecord]:
    """One record per way an event cannot be a row, each from its own node."""
    return [
        EventRecord(NOW, f"{prefix}-gpu", "xid", -1, None, 79),
        EventRecord(NOW, f"{prefix}-code", "xid", 1, None, 1 << 63),
        EventRecord(1e300, f"{prefix}-time", "xid", 1, None, 79),
        EventRecord(float("nan"), f"{prefix}-nan", "xid", 1, None, 79),
        EventRecord(NOW, f"{prefix}-wide", "xid", 70_000, None, 79),
    ]


def test_bad_records_are_dropped_and_the_good_one_kept() -> None:
    bad = bad_records("frame")
    frames = event_rows.by_hour([*bad, GOOD, *bad])
    assert len(frames) == 1
    _, frame = frames[0]
    assert frame["node"].to_list() == ["gpu-001"]
    assert frame["code"].to_list() == [48]


def test_a_flush_with_bad_records_writes_the_good_event_to_parquet(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    config = parse_config({"fleet": {"hosts": ["gpu-001"]}})
    recorder = HistoryRecorder(tmp_path, config.history, clock=lambda: NOW)
    assert recorder.recording
    bad = bad_records("flush")
    snapshot = FleetSnapshot(taken_at=NOW, nodes=(), new_events=(*bad, GOOD))
    recorder.record(snapshot)
    recorder.close()  # flushes; must not raise (serve's SIGTERM path)
    stored = pl.read_parquet(list((tmp_path / "events").rglob("*.parquet")))
    assert stored["node"].to_list() == ["gpu-001"]
    assert stored["code"].to_list() == [48]
    dropped = [r for r in caplog.records if "not recorded" in r.getMessage()]
    assert sorted(r.getMessage().split()[3] for r in dropped) == sorted(e.node for e in bad)
