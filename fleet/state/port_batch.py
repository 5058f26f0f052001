"""One flush's port rows, grouped by field layout and read as one float matrix each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from collectors.protocol import Value
from fleet.state.layout import FieldIndex, Row

if TYPE_CHECKING:
    from fleet.state.port import PortTrack

_NAN = float("nan")


class RowPlan:
    """Where one field layout (IB or NIC) keeps the values the columns read."""

    __slots__ = ("dst", "is_nic", "links", "src", "width")

    def __init__(self, index: FieldIndex, is_nic: bool, tracked: dict[str, int]) -> None:
        self.is_nic = is_nic
        self.width = len(index)
        known = [(col, index[name]) for name, col in tracked.items() if index[name] is not None]
        self.dst = np.array([c for c, _ in known], dtype=np.intp)
        self.src = np.array([p for _, p in known], dtype=np.intp)
        # IB: state, phys_state, rate_gbps; NIC: up, speed_mbps (-1: not sent)
        names = ("up", "speed_mbps") if is_nic else ("state", "phys_state", "rate_gbps")
        self.links = [index.positions.get(n, -1) for n in names]


def matrix_of(rows: list[Row], width: int) -> np.ndarray:
    """Rows as a float matrix ``width`` wide (None and anything unreadable: NaN)."""
    try:
        matrix = np.array(rows, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        matrix = None  # ragged rows (short or long) or a value beyond float range
    if matrix is not None and matrix.ndim == 2:
        if matrix.shape[1] >= width:
            return matrix
        out = np.full((len(rows), width), np.nan)  # rows short alike: the rest is missing
        out[:, : matrix.shape[1]] = matrix
        return out
    out = np.full((len(rows), width), np.nan)
    for i, row in enumerate(rows):
        for j, value in enumerate(row[:width]):
            out[i, j] = _number(value)
    return out


def _number(value: Value) -> float:
    try:
        return _NAN if value is None else float(value)
    except OverflowError:
        return _NAN


class RowBatch:
    """Rows of one field layout in one flush round, with their tracks and times."""

    __slots__ = ("received", "rows", "times", "tracks")

    def __init__(self) -> None:
        self.tracks: list[PortTrack] = []
        self.rows: list[Row] = []
        self.times: list[float] = []
        self.received: list[float] = []

    def add(self, tracks: Sequence[PortTrack], rows: Sequence[Row], t: float, at: float) -> None:
        self.tracks.extend(tracks)
        self.rows.extend(rows)
        self.times.extend([t] * len(rows))
        self.received.extend([at] * len(rows))
