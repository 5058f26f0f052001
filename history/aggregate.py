"""Rollups of rollups: ``gpu_minutes`` to a level (gpu, node, fleet) and a resolution.

Utilization means are weighted by ``util_samples`` (the readings behind each minute's
mean), so a coarser mean equals the mean of the raw readings. Other means are weighted
by ``samples`` (ticks), which is exact whenever no reading of the minute failed. Maxima
stay maxima; the verdict is the worst one seen. Every resolution divides a UTC day,
so a day partition can be aggregated on its own.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

import polars as pl

from fleet.model import VERDICT_RANK

Level = Literal["gpu", "node", "fleet"]
Resolution = Literal["1m", "1h", "1d"]
RESOLUTIONS: dict[str, str] = {"1m": "1m", "1h": "1h", "1d": "1d"}
KEYS: dict[str, list[str]] = {
    "gpu": ["node", "gpu", "uuid", "serial", "pci_bus_id"],
    "node": ["node"],
    "fleet": [],
}
UTIL_WEIGHT = "_util_weight"  # internal: what the rolling average is weighted by
_RANK_OF = {k: v for k, v in VERDICT_RANK.items()}
_VERDICT_OF = {v: k for k, v in VERDICT_RANK.items()}


def _weighted_mean(column: str, by: str = "samples") -> pl.Expr:
    weight = pl.when(pl.col(column).is_not_null()).then(pl.col(by)).otherwise(0)
    total = weight.cast(pl.Float64).sum()
    value = (pl.col(column).cast(pl.Float64) * pl.col(by)).sum() / total
    return pl.when(total > 0).then(value).otherwise(None).alias(column)


def aggregate(frame: pl.DataFrame, level: Level, resolution: Resolution) -> pl.DataFrame:
    """``gpu_minutes`` rows aggregated to ``level`` and ``resolution``, sorted by time."""
    keys = KEYS[level]
    counts: list[pl.Expr] = []
    if level == "node":
        counts = [pl.col("gpu").n_unique().cast(pl.UInt32).alias("gpus")]
    elif level == "fleet":
        counts = [
            pl.col("node").n_unique().cast(pl.UInt32).alias("nodes"),
            pl.struct("node", "gpu").n_unique().cast(pl.UInt32).alias("gpus"),
        ]
    bucketed = frame.with_columns(
        pl.col("ts").dt.truncate(RESOLUTIONS[resolution]),
        pl.col("verdict").replace_strict(_RANK_OF, default=1, return_dtype=pl.UInt8).alias("_rank"),
    )
    out = bucketed.group_by(["ts", *keys]).agg(
        *counts,
        _weighted_mean("util_mean", "util_samples").cast(pl.Float32),
        pl.col("util_max").max(),
        _weighted_mean("sm_active_mean").cast(pl.Float32),
        _weighted_mean("mem_used_mean_bytes").round(0).cast(pl.UInt64),
        _weighted_mean("power_mean_w").cast(pl.Float32),
        pl.col("power_max_w").max(),
        pl.col("temp_max_c").max(),
        pl.col("_rank").max().alias("verdict"),
        pl.col("samples").sum().cast(pl.UInt32),
        pl.col("util_samples").sum().cast(pl.UInt32),
        pl.col("util_samples").cast(pl.Float64).sum().alias(UTIL_WEIGHT),
    )
    verdict = pl.col("verdict").replace_strict(_VERDICT_OF, return_dtype=pl.String)
    return out.with_columns(verdict).sort(["ts", *keys])


def as_gpu_minutes(frame: pl.DataFrame) -> pl.DataFrame:
    """``aggregate(frame, "gpu", "1m")`` for rows known to be one per GPU per minute.

    Skips the group-by (the costly part of a month's export at full resolution).
    """
    return frame.select(
        "ts", "node", "gpu", "uuid", "serial", "pci_bus_id", "util_mean", "util_max",
        "sm_active_mean", "mem_used_mean_bytes", "power_mean_w", "power_max_w", "temp_max_c",
        "verdict",
        pl.col("samples").cast(pl.UInt32),
        pl.col("util_samples").cast(pl.UInt32),
        pl.col("util_samples").cast(pl.Float64).alias(UTIL_WEIGHT),
    ).sort("ts", "node", "gpu")  # fmt: skip


def with_rolling_mean(fleet: pl.DataFrame, window: timedelta) -> pl.DataFrame:
    """Add ``util_rolling_mean``: the weighted mean utilization over ``window`` ending at ts."""
    weighted = pl.col("util_mean").cast(pl.Float64).fill_null(0) * pl.col(UTIL_WEIGHT)
    num = weighted.rolling_sum_by("ts", window, closed="right")
    den = pl.col(UTIL_WEIGHT).rolling_sum_by("ts", window, closed="right")
    rolling = pl.when(den > 0).then(num / den).otherwise(None).cast(pl.Float32)
    return fleet.sort("ts").with_columns(rolling.alias("util_rolling_mean"))
