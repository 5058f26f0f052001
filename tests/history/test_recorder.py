"""HistoryRecorder: ring, minute rollups, reading back, memory-only mode."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean

import numpy as np
import polars as pl

from history import HistoryRecorder
from history.layout import GPU_MINUTES, read_table
from history.section import HistorySection
from testkit.synthetic_history import (
    node_name,
    sample_mem,
    sample_power,
    sample_temp,
    sample_util,
    snapshot,
)

T0 = datetime(2026, 9, 10, 12, 0, tzinfo=UTC).timestamp()
CONFIG = HistorySection()


def f32(value: float) -> float:
    """``value`` as the float32 column stores it."""
    return float(np.float32(value))


def record_seconds(recorder: HistoryRecorder, seconds: int, nodes: int = 3, gpus: int = 2) -> None:
    for s in range(seconds):
        recorder.record(snapshot(T0 + s, nodes, gpus))


def test_minute_rollups_equal_aggregates_of_the_raw_samples(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    record_seconds(recorder, 150)  # two whole minutes and a part of the third
    recorder.flush()
    rows = read_table(tmp_path, GPU_MINUTES).sort("ts", "node", "gpu")
    assert rows.height == 2 * 3 * 2  # the minute in progress is not written by flush

    for row in rows.iter_rows(named=True):
        n, g = int(row["node"].split("-")[1]), row["gpu"]
        minute = row["ts"].timestamp()
        ts = [minute + s for s in range(60)]
        assert row["uuid"] == f"GPU-{n:04d}-{g}"
        assert row["samples"] == 60
        assert row["util_mean"] == f32(fmean(sample_util(n, g, t) for t in ts))
        assert row["util_max"] == max(sample_util(n, g, t) for t in ts)
        assert row["power_mean_w"] == f32(fmean(sample_power(n, g, t) for t in ts))
        assert row["temp_max_c"] == max(sample_temp(n, g, t) for t in ts)
        assert row["mem_used_mean_bytes"] == round(fmean(sample_mem(n, g, t) for t in ts))
        assert row["verdict"] == "ok"
    recorder.close()
    assert read_table(tmp_path, GPU_MINUTES).height == 3 * 3 * 2  # close writes the last one


def test_worst_verdict_of_the_minute_is_kept(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    for s in range(61):
        state = "broken" if s == 30 else "up"  # one failing tick in the first minute
        recorder.record(snapshot(T0 + s, 1, 1, states=lambda _n, st=state: st))  # type: ignore[misc]
    recorder.flush()
    rows = read_table(tmp_path, GPU_MINUTES)
    assert rows["verdict"].to_list() == ["fail"]


def test_ring_is_bounded_narrow_and_feeds_gpu_series() -> None:
    recorder = HistoryRecorder(None, HistorySection(ring_minutes=1), clock=lambda: T0)
    record_seconds(recorder, 200)
    assert len(recorder.ring) == 61  # one minute back from the newest tick, inclusive
    assert recorder.ring_bytes_per_sample() <= 48

    series = recorder.gpu_series(node_name(2), 1, 5)
    expected = [T0 + s for s in range(195, 200)]
    assert series.util == tuple(float(sample_util(2, 1, t)) for t in expected)
    assert series.power_w == tuple(sample_power(2, 1, t) for t in expected)
    assert series.temp_c == tuple(float(sample_temp(2, 1, t)) for t in expected)
    assert recorder.gpu_series("no-such-node", 0, 5).util == ()


def test_the_default_ring_holds_what_its_readers_ask_and_no_more() -> None:
    """The node screen draws 16 points, a NATS viewer asks its shard for 120 (1 s ticks)."""
    recorder = HistoryRecorder(None, CONFIG, clock=lambda: T0, tick_s=1.0, expected_gpus=6)
    record_seconds(recorder, 400)
    series = recorder.gpu_series(node_name(1), 0, 120)
    expected = [T0 + s for s in range(280, 400)]
    assert series.util == tuple(float(sample_util(1, 0, t)) for t in expected)
    assert len(recorder.ring) == 121  # two minutes back from the newest tick, inclusive
    # At 8,000 GPUs (1,000 nodes) that is 5.5 MiB; the 15-minute ring held 41 MiB.
    assert recorder.ring.nbytes() == 121 * (6 * 6 + 8)


def test_missing_values_stay_missing() -> None:
    recorder = HistoryRecorder(None, CONFIG, clock=lambda: T0)
    snap = snapshot(T0, 1, 1)
    gpu = snap.nodes[0].gpus[0]
    blank = type(gpu)(index=0, uuid=gpu.uuid, name=gpu.name)  # every reading None
    node = type(snap.nodes[0])(
        name=snap.nodes[0].name, status="streaming", state="up", gpus=(blank,)
    )
    recorder.record(type(snap)(taken_at=T0, nodes=(node,)))
    series = recorder.gpu_series(node.name, 0, 1)
    assert (series.util, series.power_w, series.temp_c) == ((None,), (None,), (None,))
    assert recorder.utilization_summary(T0).now is None


def test_memory_only_writes_nothing_but_answers(tmp_path: Path) -> None:
    recorder = HistoryRecorder(None, CONFIG, clock=lambda: T0)
    record_seconds(recorder, 130)
    recorder.close()
    assert not recorder.recording
    assert list(tmp_path.iterdir()) == []
    points = recorder.utilization_series(3600, T0 + 130)
    assert [p.ts for p in points] == [T0, T0 + 60, T0 + 120]


def test_utilization_series_and_rolling_mean() -> None:
    """Fleet of one GPU at 10 % for a minute, 40 % the next, 70 % the next (whole minutes).

    Window 120 s: rolling at minute 1 = (10 + 40) / 2 = 25; at minute 2 = (40 + 70) / 2 = 55.
    """
    recorder = HistoryRecorder(None, CONFIG, clock=lambda: T0)
    for minute, util in enumerate((10.0, 40.0, 70.0)):
        for s in range(60):
            snap = snapshot(T0 + minute * 60 + s, 1, 1)
            gpu = snap.nodes[0].gpus[0]
            node = snap.nodes[0]
            gpus = (type(gpu)(index=0, uuid=gpu.uuid, name=gpu.name, util_gpu=util),)
            recorder.record(
                type(snap)(
                    taken_at=snap.taken_at,
                    nodes=(type(node)(name=node.name, status="streaming", state="up", gpus=gpus),),
                )
            )
    points = recorder.utilization_series(120, T0 + 179)
    assert [(p.util, p.rolling) for p in points] == [(40.0, 25.0), (70.0, 55.0)]
    summary = recorder.utilization_summary(T0 + 179)
    assert (summary.now, summary.avg_1h) == (70.0, 40.0)


def test_rollups_are_real_parquet_with_the_documented_schema(tmp_path: Path) -> None:
    recorder = HistoryRecorder(tmp_path, CONFIG, clock=lambda: T0)
    record_seconds(recorder, 61)
    recorder.close()
    (path,) = tmp_path.glob("gpu_minutes/date=2026-09-10/*.parquet")
    schema = pl.read_parquet_schema(path)
    assert list(schema) == [
        "ts", "node", "gpu", "uuid", "serial", "pci_bus_id", "util_mean", "util_max",
        "sm_active_mean",
        "mem_used_mean_bytes", "power_mean_w", "power_max_w", "temp_max_c", "verdict", "samples",
        "util_samples",
    ]  # fmt: skip
    assert schema["ts"] == pl.Datetime("ms", "UTC")


def test_an_unchanged_fleet_view_reuses_the_previous_frame() -> None:
    """FleetState hands over the same nodes tuple when no node changed since the last tick."""
    recorder = HistoryRecorder(None, CONFIG, clock=lambda: T0)
    first = snapshot(T0, 2, 2)
    frames = []
    for snap in (first, replace(first, taken_at=T0 + 1), snapshot(T0 + 2, 2, 2)):
        recorder.record(snap)  # the second is the same tuple (same values), the third is new
        assert recorder.last_tick is not None
        frames.append(recorder.last_tick.columns)
    assert frames[1] is frames[0] and frames[2] is not frames[0]
    assert recorder.gpu_series(node_name(1), 1, 3).util == (
        float(sample_util(1, 1, T0)),
        float(sample_util(1, 1, T0)),
        float(sample_util(1, 1, T0 + 2)),
    )
