"""Exports equal aggregates computed directly from the raw samples."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean

import polars as pl
import pytest

from fleet.facade import ExportRequest
from fleet.model import FleetSnapshot
from history import HistoryRecorder
from history.section import HistorySection
from ledger.export import export_history, parse_time
from testkit.synthetic_history import sample_util, snapshot

T0 = datetime(2026, 9, 10, 10, 0, tzinfo=UTC).timestamp()
STEP = 20  # seconds between ticks: 3 h of history in 540 ticks
TICKS = 3 * 3600 // STEP


def with_gaps(snap: FleetSnapshot, tick: int) -> FleetSnapshot:
    """GPU 1 of node 0 reads no utilization on every third tick (a failed NVML field)."""
    if tick % 3:
        return snap
    node = snap.nodes[0]
    gpus = (node.gpus[0], replace(node.gpus[1], util_gpu=None), *node.gpus[2:])
    return replace(snap, nodes=(replace(node, gpus=gpus), *snap.nodes[1:]))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple]]:
    """A data directory with 3 h of 2 nodes x 2 GPUs, and the raw samples behind it."""
    data_dir = tmp_path_factory.mktemp("history")
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: T0)
    raw = []
    for tick in range(TICKS):
        snap = with_gaps(snapshot(T0 + tick * STEP, 2, 2), tick)
        recorder.record(snap)
        for node in snap.nodes:
            for gpu in node.gpus:
                raw.append(
                    (snap.taken_at, node.name, gpu.index, gpu.util_gpu, gpu.power_w, gpu.temp_c)
                )
    recorder.close()
    return data_dir, raw


def export(data_dir: Path, tmp_path: Path, **fields: object) -> pl.DataFrame:
    request = ExportRequest(
        path=tmp_path / "out.parquet", since="2026-09-10", until="2026-09-11", format="parquet"
    )
    path = export_history(data_dir, replace(request, **fields), now=T0 + 86400)  # type: ignore[arg-type]
    return pl.read_parquet(path)


def test_node_hourly_means_equal_means_of_the_raw_samples(recorded: tuple, tmp_path: Path) -> None:
    data_dir, raw = recorded
    utils, powers, temps = defaultdict(list), defaultdict(list), defaultdict(list)
    for t, node, _gpu, util, power, temp in raw:
        key = (int(t // 3600 * 3600), node)
        if util is not None:
            utils[key].append(util)
        powers[key].append(power)
        temps[key].append(temp)

    rows = export(data_dir, tmp_path, level="node", resolution="1h")
    assert rows.height == 3 * 2
    for row in rows.iter_rows(named=True):
        key = (int(row["ts"].timestamp()), row["node"])
        assert row["util_mean"] == pytest.approx(fmean(utils[key]), rel=1e-6)
        assert row["power_mean_w"] == pytest.approx(fmean(powers[key]), rel=1e-6)
        assert row["temp_max_c"] == max(temps[key])
        assert row["samples"] == len(powers[key])
        assert row["gpus"] == 2


def test_gpu_minutes_equal_the_raw_samples_of_each_minute(recorded: tuple, tmp_path: Path) -> None:
    data_dir, raw = recorded
    expected = defaultdict(list)
    for t, node, gpu, util, _power, _temp in raw:
        expected[(int(t // 60 * 60), node, gpu)].append(util)
    rows = export(data_dir, tmp_path, level="gpu", resolution="1m")
    assert rows.height == len(expected)
    for row in rows.iter_rows(named=True):
        values = [
            u
            for u in expected[(int(row["ts"].timestamp()), row["node"], row["gpu"])]
            if u is not None
        ]
        assert row["util_mean"] == (pytest.approx(fmean(values), rel=1e-6) if values else None)
        assert row["util_max"] == (max(values) if values else None)


def test_fleet_rolling_mean_is_weighted_over_the_window(recorded: tuple, tmp_path: Path) -> None:
    data_dir, raw = recorded
    request = ExportRequest(
        path=tmp_path / "fleet.csv", since="2026-09-10T11:00", until="2026-09-11", level="fleet",
        resolution="1h", format="csv",
    )  # fmt: skip
    export_history(data_dir, request, rolling_window_s=2 * 3600, now=T0 + 86400)
    rows = pl.read_csv(tmp_path / "fleet.csv")
    assert rows["ts"].to_list() == ["2026-09-10T11:00:00Z", "2026-09-10T12:00:00Z"]
    for ts, rolling in zip((T0 + 3600, T0 + 7200), rows["util_rolling_mean"], strict=True):
        # closed on the right: the buckets of ts - 1 h and ts, i.e. samples in [ts - 1 h, ts + 1 h)
        window = [r[3] for r in raw if ts - 3600 <= r[0] < ts + 3600 and r[3] is not None]
        assert rolling == pytest.approx(fmean(window), rel=1e-5)
    assert rows["nodes"].to_list() == [2, 2] and rows["gpus"].to_list() == [4, 4]


def test_json_export_is_one_object_per_line(recorded: tuple, tmp_path: Path) -> None:
    data_dir, _ = recorded
    request = ExportRequest(
        path=tmp_path / "x.json", since="2026-09-10", until="2026-09-11", level="fleet",
        resolution="1d", format="json",
    )  # fmt: skip
    path = export_history(data_dir, request, now=T0 + 86400)
    rows = pl.read_ndjson(path)
    assert rows.height == 1 and rows["samples"][0] == TICKS * 4


def test_export_beside_a_live_recorder_skips_temporaries_and_damaged_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "data"
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: T0)
    for s in range(125):
        recorder.record(snapshot(T0 + s, 1, 1))
    recorder.flush()  # two minutes on disk; the recorder keeps running
    folder = data_dir / "gpu_minutes" / "date=2026-09-10"
    (folder / ".tmp-10-live.parquet.99").write_bytes(b"PAR1 half written")
    (folder / "09-broken.parquet").write_bytes(b"not parquet")
    steps: list[tuple[int, int]] = []
    with caplog.at_level(logging.WARNING):
        path = export_history(
            data_dir,
            ExportRequest(path=tmp_path / "o.parquet", since="2h", level="gpu", resolution="1m",
                          format="parquet"),
            progress=lambda done, total: steps.append((done, total)),
            now=T0 + 125,
        )  # fmt: skip
    assert pl.read_parquet(path)["samples"].to_list() == [60, 60]
    assert "09-broken.parquet" in caplog.text
    assert steps[-1][0] == steps[-1][1] and [d for d, _ in steps] == sorted(d for d, _ in steps)
    recorder.close()


def test_an_empty_range_writes_an_empty_file(tmp_path: Path) -> None:
    path = export_history(
        tmp_path, ExportRequest(path=tmp_path / "e.csv", since="1d", format="csv"), now=T0
    )
    assert pl.read_csv(path).height == 0


def test_time_arguments() -> None:
    assert parse_time("7d", T0).timestamp() == T0 - 7 * 86400
    assert parse_time("2026-09-01", T0) == datetime(2026, 9, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="expected '7d'"):
        parse_time("last tuesday", T0)


def test_a_minute_recorded_by_two_sessions_is_merged(tmp_path: Path) -> None:
    """Stop after 20 s of a minute, restart, record its last 40 s: one row, 60 samples."""
    first = HistoryRecorder(tmp_path, HistorySection(), clock=lambda: T0)
    for s in range(20):
        first.record(snapshot(T0 + s, 1, 1))
    first.close()
    second = HistoryRecorder(tmp_path, HistorySection(), clock=lambda: T0 + 20)
    for s in range(20, 61):
        second.record(snapshot(T0 + s, 1, 1))
    second.close()
    rows = export(tmp_path, tmp_path / "out", level="gpu", resolution="1m")
    first_minute = rows.filter(pl.col("ts") == datetime.fromtimestamp(T0, UTC))
    assert first_minute["samples"].to_list() == [60]
    expected = fmean(sample_util(0, 0, T0 + s) for s in range(60))
    assert first_minute["util_mean"][0] == pytest.approx(expected, rel=1e-6)
