"""Hour files: a large hour is split into files, so the rows held in memory stay bounded."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from history.layout import EVENTS, GPU_MINUTES, partition_files
from history.store import HistoryStore

T0_MS = round(datetime(2026, 9, 10, 12, 0, tzinfo=UTC).timestamp() * 1000)
GPUS = 30


def minute_rows(minute: int) -> pl.DataFrame:
    """``GPUS`` rows of one minute's rollups, as the recorder's minute close makes them."""
    frame = pl.DataFrame(
        {
            "ts": [T0_MS + minute * 60_000] * GPUS,
            "node": [f"gpu-{g // 8:04d}" for g in range(GPUS)],
            "gpu": [g % 8 for g in range(GPUS)],
            "uuid": [f"GPU-{g:04d}" for g in range(GPUS)],
            "util_mean": [float(minute)] * GPUS,
        }
    )
    return frame.with_columns(pl.col("ts").cast(pl.Datetime("ms", "UTC")))


def test_a_large_hour_goes_to_several_files_and_the_store_holds_at_most_one(
    tmp_path: Path,
) -> None:
    store = HistoryStore(tmp_path, "20260910T120000Z-abcdef", file_rows=100)
    held = []
    for minute in range(20):  # 600 rows in one hour; a file is full after 4 minutes (120)
        store.append(GPU_MINUTES, minute_rows(minute), T0_MS + minute * 60_000)
        store.write_dirty()
        held.append(store.held_rows())
    store.close()

    assert max(held) < 100  # before: every row of the hour, 600 by its end
    files = partition_files(tmp_path, GPU_MINUTES)
    minutes_per_file = [pl.read_parquet(f)["util_mean"].unique().sort().to_list() for f in files]
    # Listed in the order they were begun (readers take files in that order).
    assert minutes_per_file == [[float(m) for m in range(k, k + 4)] for k in range(0, 20, 4)]
    assert files[1].name == "12-20260910T120000Z-abcdef_001.parquet"
    table = pl.concat(pl.read_parquet(f) for f in files)
    assert table.height == 20 * GPUS  # every row once: none lost, none written twice
    assert table["util_mean"].to_list() == [float(m) for m in range(20) for _ in range(GPUS)]


def test_a_small_hour_is_still_one_file(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path, "20260910T120000Z-abcdef")
    for minute in range(60):
        store.append(GPU_MINUTES, minute_rows(minute), T0_MS + minute * 60_000)
        store.write_dirty()
    store.close()
    (path,) = partition_files(tmp_path, GPU_MINUTES)
    assert path.name == "12-20260910T120000Z-abcdef.parquet"
    assert pl.read_parquet(path).height == 60 * GPUS
    assert partition_files(tmp_path, EVENTS) == []
