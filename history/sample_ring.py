"""The in-memory ring of full-resolution samples: fixed arrays written in place.

One numpy array per kept column, ``ticks x GPUs`` (a GPU's column is its registry
key), allocated once and overwritten slot by slot: a tick adds no object, and the
ring's size depends only on ``ring_minutes``, the tick interval and the number of
GPUs, never on how long the process has run. It keeps the columns somebody reads at
full resolution (the node screen's sparklines: utilization, power, temperature); the
minute rollups take every column from the tick itself, before it reaches the ring.
"""

from __future__ import annotations

import math

import numpy as np

from history.ring import U8_NULL, Layout

# The ring's columns, their dtypes and their "no reading" sentinels (as the tick frame).
RING_COLUMNS: dict[str, tuple[type[np.generic], float | int]] = {
    "util": (np.uint8, U8_NULL),
    "power_w": (np.float32, np.nan),
    "temp_c": (np.uint8, U8_NULL),
}
# Bytes per tick besides the GPU columns: its time.
_TIME_BYTES = np.dtype(np.float64).itemsize


def ring_bytes(minutes: float, tick_s: float, gpus: int) -> int:
    """What a ring of ``minutes`` at one tick per ``tick_s`` holds for ``gpus`` GPUs."""
    per_tick = sum(np.dtype(dtype).itemsize for dtype, _ in RING_COLUMNS.values()) * gpus
    return ring_ticks(minutes, tick_s) * (per_tick + _TIME_BYTES)


def ring_ticks(minutes: float, tick_s: float) -> int:
    """Slots for ``minutes`` of ticks, both ends included (as the span is inclusive)."""
    return math.floor(minutes * 60.0 / tick_s + 1e-9) + 1


class SampleRing:
    """The last ``minutes`` of ticks, oldest first, in preallocated columns.

    A tick older than the span is dropped even when its slot is not needed yet (after a
    stall the ring holds only the recent minutes); ticks arriving faster than
    ``tick_s`` overwrite the oldest slot, so the ring then spans less time.
    """

    def __init__(self, minutes: float, tick_s: float = 1.0, gpus: int = 0) -> None:
        self.span_s = minutes * 60.0
        self.capacity = ring_ticks(minutes, tick_s)
        self.times = np.full(self.capacity, np.nan)
        self.columns = {name: self._blank(name, gpus) for name in RING_COLUMNS}
        self._next = 0  # the slot the next tick is written into
        self._count = 0

    def _blank(self, name: str, gpus: int) -> np.ndarray:
        dtype, null = RING_COLUMNS[name]
        return np.full((self.capacity, gpus), null, dtype=dtype)

    @property
    def width(self) -> int:
        """GPU columns held (registry keys 0 .. width-1)."""
        return int(self.columns["util"].shape[1])

    def __len__(self) -> int:
        return self._count

    def append(self, t: float, layout: Layout, values: dict[str, np.ndarray]) -> None:
        """Write one tick: ``values[column][i]`` belongs to GPU ``layout.keys[i]``."""
        keys = layout.keys
        if keys.size and int(keys.max()) >= self.width:
            self._widen(int(keys.max()) + 1)
        slot = self._next
        where: slice | np.ndarray = slice(0, len(keys)) if layout.contiguous else keys
        for name, column in self.columns.items():
            row = column[slot]
            if len(keys) != len(row):  # GPUs missing from this tick read as no reading
                row.fill(RING_COLUMNS[name][1])
            row[where] = values[name]
        self.times[slot] = t
        self._next = (slot + 1) % self.capacity
        self._count = min(self._count + 1, self.capacity)
        self._drop_older_than(t - self.span_s)

    def _drop_older_than(self, horizon: float) -> None:
        while self._count and self.times[self._oldest()] < horizon:
            self._count -= 1

    def _oldest(self) -> int:
        return (self._next - self._count) % self.capacity

    def _widen(self, needed: int) -> None:
        """Room for more GPUs (a node joined beyond the expected size): copy once."""
        width = max(needed, self.width + self.width // 4)
        for name, old in self.columns.items():
            fresh = self._blank(name, width)
            fresh[:, : old.shape[1]] = old
            self.columns[name] = fresh

    def nbytes(self) -> int:
        """Memory held by the ring's arrays (all of it, filled or not)."""
        return self.times.nbytes + sum(c.nbytes for c in self.columns.values())

    def samples(self) -> int:
        """GPU-samples held (ticks held x GPU columns)."""
        return self._count * self.width

    def slots(self) -> int:
        """GPU-sample slots allocated (capacity x GPU columns)."""
        return self.capacity * self.width

    def series(self, key: int, column: str, points: int) -> tuple[float | None, ...]:
        """The last ``points`` values of GPU ``key``'s ``column`` (sentinels become None)."""
        count = min(points, self._count)
        if count <= 0:
            return ()
        order = (self._next - count + np.arange(count)) % self.capacity
        if key >= self.width:
            return (None,) * count
        values = self.columns[column][order, key].astype(np.float64)
        null = RING_COLUMNS[column][1]
        if null == null:  # an integer sentinel; NaN (the float sentinel) is NaN already
            values[values == null] = np.nan
        return tuple(None if v != v else float(v) for v in values.tolist())
