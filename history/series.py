"""Fleet utilization per minute, kept in memory for the plot and the header averages.

Each minute holds the sample-weighted sum of GPU utilization and its weight, so
averages over any window weight every GPU-sample equally, the same way exports do.
"""

from __future__ import annotations

import logging
import threading
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl

from fleet.records import UtilizationPoint
from history.layout import GPU_MINUTES, partition_files

log = logging.getLogger(__name__)

MINUTE_MS = 60_000
Partial = tuple[int, float, float]  # (minute_ms, utilization sum, weight) of the minute in progress


def minute_sums(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per minute of a ``gpu_minutes`` frame: its time (ms), utilization sum
    (``util_mean * util_samples`` over the rows with a ``util_mean``) and weight.

    In numpy rather than a polars group-by: ``serve`` runs no other group-by, and the
    first one maps ~7 MiB of polars' code into the resident set for good.
    """
    util = frame["util_mean"].cast(pl.Float64).to_numpy()  # null -> NaN
    known = ~np.isnan(util)
    ts = frame["ts"].dt.epoch("ms").to_numpy()[known]
    weights = frame["util_samples"].fill_null(0).cast(pl.Float64).to_numpy()[known]
    minutes, slot = np.unique(ts, return_inverse=True)
    sums = np.bincount(slot, weights=util[known] * weights, minlength=minutes.size)
    return minutes, sums, np.bincount(slot, weights=weights, minlength=minutes.size)


class FleetMinuteSeries:
    """Minute → (utilization sum, weight), bounded to the last ``keep_s`` seconds."""

    def __init__(self, keep_s: float) -> None:
        self.keep_ms = round(keep_s * 1000)
        self._minutes: dict[int, tuple[float, float]] = {}
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # Resuming reads days of rollups; it runs on a thread and merges under this lock.
        self._lock = threading.Lock()
        self._loader: threading.Thread | None = None

    def add(self, minute_ms: int, util_sum: float, weight: float) -> None:
        """Add (or merge into) one minute."""
        with self._lock:
            self._add(minute_ms, util_sum, weight)

    def _add(self, minute_ms: int, util_sum: float, weight: float) -> None:
        old_sum, old_weight = self._minutes.get(minute_ms, (0.0, 0.0))
        self._minutes[minute_ms] = (old_sum + util_sum, old_weight + weight)
        if len(self._minutes) > self.keep_ms // MINUTE_MS + 60:  # prune now and then, not per add
            horizon = max(self._minutes) - self.keep_ms
            self._minutes = {m: v for m, v in self._minutes.items() if m >= horizon}
        self._arrays = None

    def add_frame(self, frame: pl.DataFrame) -> None:
        """Add every minute of a ``gpu_minutes`` frame."""
        minutes, sums, weights = minute_sums(frame)
        with self._lock:
            rows = zip(minutes.tolist(), sums.tolist(), weights.tolist(), strict=True)
            for ts, util_sum, weight in rows:
                self._add(int(ts), float(util_sum), float(weight))

    def load(self, data_dir: Path, days: list[date]) -> None:
        """Start resuming from the ``gpu_minutes`` files of ``days`` that exist now.

        The files are listed here, before this session writes any, and read on a thread
        (for 8,000 GPUs a week of rollups is tens of millions of rows); ``wait_loaded``
        joins it.
        """
        paths = partition_files(data_dir, GPU_MINUTES, days)
        self._loader = threading.Thread(
            target=self._read, args=(paths,), name="history-resume", daemon=True
        )
        self._loader.start()

    def _read(self, paths: list[Path]) -> None:
        for path in paths:
            try:
                frame = pl.read_parquet(path, columns=["ts", "util_mean", "util_samples"])
            except Exception as exc:  # polars raises several types for damaged files
                log.warning("skipping unreadable history file %s: %s", path, exc)
                continue
            self.add_frame(frame)

    def wait_loaded(self, timeout: float | None = None) -> bool:
        """Wait for the resume started by ``load``; False if it is still running."""
        if self._loader is not None:
            self._loader.join(timeout)
            return not self._loader.is_alive()
        return True

    def _sorted(self, partial: Partial | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        with self._lock:
            if self._arrays is None:
                keys = sorted(self._minutes)
                self._arrays = (
                    np.array(keys, dtype=np.int64),
                    np.array([self._minutes[k][0] for k in keys]),
                    np.array([self._minutes[k][1] for k in keys]),
                )
            ts, sums, weights = self._arrays
        if partial is not None and partial[2] > 0 and (not ts.size or partial[0] > ts[-1]):
            ts = np.append(ts, partial[0])
            sums, weights = np.append(sums, partial[1]), np.append(weights, partial[2])
        return ts, sums, weights

    def points(
        self, window_s: float, now: float, partial: Partial | None
    ) -> list[UtilizationPoint]:
        """Minutes in ``(now - window_s, now]`` with the rolling mean over ``window_s`` at each."""
        ts, sums, weights = self._sorted(partial)
        window_ms = round(window_s * 1000)
        cum_s = np.concatenate(([0.0], np.cumsum(sums)))
        cum_w = np.concatenate(([0.0], np.cumsum(weights)))
        first = int(np.searchsorted(ts, round(now * 1000) - window_ms, side="right"))
        last = int(np.searchsorted(ts, round(now * 1000), side="right"))
        starts = np.searchsorted(ts, ts[first:last] - window_ms, side="right")
        out = []
        for offset, start in enumerate(starts):
            i = first + offset
            if weights[i] <= 0:
                continue
            rolling_w = cum_w[i + 1] - cum_w[start]
            out.append(
                UtilizationPoint(
                    ts=float(ts[i]) / 1000,
                    util=float(sums[i] / weights[i]),
                    rolling=float((cum_s[i + 1] - cum_s[start]) / rolling_w),
                )
            )
        return out

    def average(self, from_s: float, to_s: float, partial: Partial | None) -> float | None:
        """Sample-weighted utilization of the minutes starting in ``(from_s, to_s]``."""
        ts, sums, weights = self._sorted(partial)
        lo = int(np.searchsorted(ts, round(from_s * 1000), side="right"))
        hi = int(np.searchsorted(ts, round(to_s * 1000), side="right"))
        weight = float(weights[lo:hi].sum())
        return float(sums[lo:hi].sum() / weight) if weight > 0 else None
