"""The fleet's minute series from rollup rows, checked against DuckDB's group-by."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from history.series import FleetMinuteSeries, minute_sums

T0_MS = round(datetime(2026, 9, 10, 12, 0, tzinfo=UTC).timestamp() * 1000)


def rollup_rows() -> pl.DataFrame:
    """Three minutes out of order, a GPU with no reading, one with no util_samples."""
    return pl.DataFrame(
        {
            "ts": [T0_MS + 120_000, T0_MS, T0_MS, T0_MS + 60_000, T0_MS, T0_MS + 120_000],
            "util_mean": [10.5, 40.25, None, 99.0, 7.0, 0.0],
            "util_samples": [60, 58, 60, None, 2, 30],
        },
        schema={"ts": pl.Int64, "util_mean": pl.Float32, "util_samples": pl.UInt16},
    ).with_columns(pl.col("ts").cast(pl.Datetime("ms", "UTC")))


def test_minute_sums_match_duckdb(tmp_path: Path) -> None:
    frame = rollup_rows()
    frame.write_parquet(tmp_path / "rows.parquet")
    expected = duckdb.sql(
        "SELECT epoch_ms(ts), sum(util_mean * coalesce(util_samples, 0)), "
        f"sum(coalesce(util_samples, 0)) FROM read_parquet('{tmp_path / 'rows.parquet'}') "
        "WHERE util_mean IS NOT NULL GROUP BY ts ORDER BY ts"
    ).fetchall()
    minutes, sums, weights = minute_sums(frame)
    got = list(zip(minutes.tolist(), sums.tolist(), weights.tolist(), strict=True))
    assert [row[0] for row in got] == [row[0] for row in expected]
    assert got == [pytest.approx(row, rel=1e-12) for row in expected]


def test_a_minute_with_no_reading_adds_nothing_to_the_series() -> None:
    series = FleetMinuteSeries(keep_s=86400)
    frame = rollup_rows().filter(pl.col("ts").dt.epoch("ms") == T0_MS + 60_000)
    series.add_frame(frame.with_columns(pl.lit(None, pl.Float32).alias("util_mean")))
    assert series.points(3600, T0_MS / 1000 + 600, None) == []
    series.add_frame(rollup_rows())
    # The minute whose only reading has no util_samples weighs nothing: not a point.
    first, third = series.points(3600, T0_MS / 1000 + 600, None)
    assert (first.ts, third.ts) == (T0_MS / 1000, T0_MS / 1000 + 120)
    assert first.util == pytest.approx((40.25 * 58 + 7.0 * 2) / 60)
    assert third.util == pytest.approx(10.5 * 60 / 90)
