"""Minute rollups: running sums per GPU updated each tick, one row per GPU per minute.

Aggregating as the ticks arrive (a handful of numpy operations on 8,000 values)
means a minute boundary costs building one small frame, not a group-by over the
minute's 480,000 samples.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from history.layout import GPU_MINUTES, SCHEMAS, empty_frame
from history.ring import MEM_NULL, MIB, U8_NULL, VERDICT_OF_RANK, TickFrame

_SUMS = ("util", "sm_active", "mem_mib", "power_w")


class MinuteAccumulator:
    """Sums, counts and maxima per GPU key for the minute in progress."""

    def __init__(self) -> None:
        self.minute_ms: int | None = None
        self._size = 0
        self._arrays: dict[str, np.ndarray] = {}
        self._grow(1024)

    def _grow(self, size: int) -> None:
        old, self._size = self._arrays, size
        fresh = {f"sum_{c}": np.zeros(size) for c in _SUMS}
        fresh |= {f"n_{c}": np.zeros(size, dtype=np.int32) for c in _SUMS}
        fresh |= {
            "max_util": np.full(size, -1, dtype=np.int16),
            "max_power_w": np.full(size, np.nan, dtype=np.float32),
            "max_temp_c": np.full(size, -1, dtype=np.int16),
            "worst": np.full(size, -1, dtype=np.int8),
            "samples": np.zeros(size, dtype=np.int32),
        }
        for name, array in old.items():
            fresh[name][: len(array)] = array
        self._arrays = fresh

    def add(self, tick: TickFrame) -> None:
        """Fold one tick's samples into the minute's sums."""
        keys = tick.layout.keys
        if keys.size and int(keys.max()) >= self._size:
            self._grow(max(self._size * 2, int(keys.max()) + 1))
        where: slice | np.ndarray = slice(0, len(keys)) if tick.layout.contiguous else keys
        a, f = self._arrays, tick.columns
        # Widened so that -1 ("no reading") cannot wrap around to 255 in a uint8.
        util = f["util"].astype(np.int16)
        temp = f["temp_c"].astype(np.int16)
        power = f["power_w"]
        known = {
            "util": util != U8_NULL,
            "sm_active": ~np.isnan(f["sm_active"]),
            "mem_mib": f["mem_mib"] != MEM_NULL,
            "power_w": ~np.isnan(power),
        }
        for column in _SUMS:
            values = f[column]
            a[f"sum_{column}"][where] += np.where(known[column], values, 0)
            a[f"n_{column}"][where] += known[column]
        a["max_util"][where] = np.maximum(a["max_util"][where], np.where(known["util"], util, -1))
        a["max_power_w"][where] = np.fmax(a["max_power_w"][where], power)
        a["max_temp_c"][where] = np.maximum(
            a["max_temp_c"][where], np.where(temp != U8_NULL, temp, -1)
        )
        a["worst"][where] = np.maximum(a["worst"][where], f["verdict"])
        a["samples"][where] += 1

    def partial(self) -> tuple[int, float, float] | None:
        """(minute, utilization sum, samples with a utilization) of the minute so far."""
        if self.minute_ms is None:
            return None
        a = self._arrays
        return self.minute_ms, float(a["sum_util"].sum()), float(a["n_util"].sum())

    def take(self, identities: pl.DataFrame) -> pl.DataFrame:
        """The finished minute as ``gpu_minutes`` rows, and a fresh start for the next one."""
        if self.minute_ms is None:
            return empty_frame(GPU_MINUTES)
        a = self._arrays
        seen = np.flatnonzero(a["samples"][: identities.height])
        frame = self._rows(seen, identities)
        self._arrays = {}
        self._grow(self._size)  # fresh zeroed arrays for the next minute
        return frame

    def _rows(self, seen: np.ndarray, identities: pl.DataFrame) -> pl.DataFrame:
        a = self._arrays

        def mean(column: str) -> np.ndarray:
            n = a[f"n_{column}"][seen]
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(n > 0, a[f"sum_{column}"][seen] / np.maximum(n, 1), np.nan)

        max_util = a["max_util"][seen]
        max_temp = a["max_temp_c"][seen]
        values = pl.DataFrame(
            {
                "ts": np.full(len(seen), self.minute_ms, dtype=np.int64),
                "util_mean": mean("util"),
                "util_max": np.where(max_util >= 0, max_util, np.nan),
                "sm_active_mean": mean("sm_active"),
                "mem_used_mean_bytes": np.rint(mean("mem_mib") * MIB),
                "power_mean_w": mean("power_w"),
                "power_max_w": a["max_power_w"][seen],
                "temp_max_c": np.where(max_temp >= 0, max_temp, np.nan),
                "verdict": a["worst"][seen],
                "samples": a["samples"][seen],
                "util_samples": a["n_util"][seen],
            },
            nan_to_null=True,
        )
        frame = pl.concat([identities[seen], values], how="horizontal").with_columns(
            pl.col("ts").cast(pl.Datetime("ms")).dt.replace_time_zone("UTC"),
            pl.col("verdict").replace_strict(
                VERDICT_OF_RANK, default="unknown", return_dtype=pl.String
            ),
        )
        schema = SCHEMAS[GPU_MINUTES]
        return frame.select(list(schema)).cast(schema)  # type: ignore[arg-type]
