"""One flush's port rows, grouped by field layout and read as one float matrix each.

A port row carries about twenty fields; the columns read nine of them (the tracked
counters and the link readings). Turning a Python number into a float is most of a
flush's cost, so a plan picks those fields from each row in C (``itemgetter``) and
converts only them, in one ``np.fromiter`` pass: the matrix a plan reads is *compact*,
one column per field it uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

from collectors.protocol import Value
from fleet.state.layout import FieldIndex, Row

if TYPE_CHECKING:
    from fleet.state.port import PortTrack

_NAN = float("nan")


def _columns(dst: np.ndarray) -> slice | np.ndarray:
    """``dst`` as a slice when it is a run of adjacent columns (cheaper to index)."""
    if dst.size and np.array_equal(dst, np.arange(dst[0], dst[0] + dst.size)):
        return slice(int(dst[0]), int(dst[0]) + dst.size)
    return dst


class RowPlan:
    """Where one field layout (IB or NIC) keeps the values the columns read.

    Attributes:
        dst: the counter columns (of :class:`~fleet.state.port_columns.PortColumns`)
            this layout sends; ``cols`` is the same as a slice where they are adjacent.
        src: where each of ``dst`` sits in the compact matrix (:meth:`matrix`).
        links: IB state, phys_state, rate_gbps (NIC up, speed_mbps) in the compact
            matrix, -1 where not sent.
        watched: which of ``dst`` go to the track in Python when they move.
    """

    __slots__ = ("cols", "dst", "is_nic", "links", "picked", "src", "take", "watched", "width")

    def __init__(
        self, index: FieldIndex, is_nic: bool, tracked: dict[str, int], watched: np.ndarray
    ) -> None:
        self.is_nic = is_nic
        self.width = len(index)
        known = [(col, index.positions[n]) for n, col in tracked.items() if n in index.positions]
        # IB: state, phys_state, rate_gbps; NIC: up, speed_mbps (-1: not sent)
        names = ("up", "speed_mbps") if is_nic else ("state", "phys_state", "rate_gbps")
        link_positions = [index.positions.get(n, -1) for n in names]
        # The row positions a flush reads, in the compact matrix's column order.
        self.picked = sorted({p for _, p in known} | {p for p in link_positions if p >= 0})
        compact = {position: k for k, position in enumerate(self.picked)}
        self.dst = np.array([c for c, _ in known], dtype=np.intp)
        self.cols = _columns(self.dst)
        self.src = np.array([compact[p] for _, p in known], dtype=np.intp)
        self.links = [compact[p] if p >= 0 else -1 for p in link_positions]
        self.watched = np.isin(self.dst, watched)
        self.take = itemgetter(*self.picked) if len(self.picked) >= 2 else None

    def matrix(self, rows: list[Row]) -> np.ndarray:
        """The rows' picked fields as a float matrix (None and anything unreadable: NaN)."""
        take, width = self.take, len(self.picked)
        if take is not None:
            try:  # one pass in C: no shape discovery over the rows first, as np.array does
                values = chain.from_iterable(map(take, rows))
                flat = np.fromiter(values, dtype=np.float64, count=len(rows) * width)
                return flat.reshape(len(rows), width)
            except (ValueError, TypeError, IndexError, OverflowError):
                pass  # a short row, or a value beyond float range: the careful path
        full = matrix_of(rows, self.width)
        return full[:, self.picked] if self.picked else np.empty((len(rows), 0))


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
    """Rows of one field layout in one flush round, with their tracks, slots and times.

    Times are kept once per added group of rows and repeated as arrays at the end.
    """

    __slots__ = ("counts", "received", "rows", "slots", "times", "tracks")

    def __init__(self) -> None:
        self.tracks: list[PortTrack] = []
        self.rows: list[Row] = []
        self.slots: list[np.ndarray] = []
        self.times: list[float] = []
        self.received: list[float] = []
        self.counts: list[int] = []

    def add(
        self,
        tracks: Sequence[PortTrack],
        rows: Sequence[Row],
        t: float,
        at: float,
        slots: np.ndarray,
    ) -> None:
        self.tracks.extend(tracks)
        self.rows.extend(rows)
        self.slots.append(slots)
        self.times.append(t)
        self.received.append(at)
        self.counts.append(len(rows))

    def slot_array(self) -> np.ndarray:
        """Every row's port slot."""
        return self.slots[0] if len(self.slots) == 1 else np.concatenate(self.slots)

    def time_array(self) -> np.ndarray:
        """Every row's sample time."""
        return np.repeat(np.array(self.times, dtype=np.float64), self.counts)

    def received_array(self) -> np.ndarray:
        """When each row's sample was received."""
        return np.repeat(np.array(self.received, dtype=np.float64), self.counts)
