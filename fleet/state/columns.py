"""The fleet's GPU readings as columns: one preallocated row per GPU slot.

Ingest writes each sample's fast GPU values straight into ``fast`` (the canonical
``GPU_FIELDS`` order, NaN for a missing value) at the node's slots; the state writes
each GPU's verdict rank when it changes. A tick copies the used rows once
(:meth:`GpuArena.freeze`), so history and the utilization figure read arrays, not
thousands of GpuSnapshot objects. Nodes get their slots when their first session
declares its GPUs; a later session with more GPUs gets a fresh range (the old one is
left unused: sessions seldom grow).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from collectors.agent.fields import GPU_FIELDS
from fleet.model import GpuColumns
from fleet.state.capacity import grown
from fleet.state.layout import FieldIndex, Row

UTIL = GPU_FIELDS.index("util_gpu")
_WIDTH = len(GPU_FIELDS)


class FastPlan:
    """Where a session's fast fields go in the canonical columns (one per session layout)."""

    __slots__ = ("canonical", "dst", "src", "width")

    def __init__(self, index: FieldIndex) -> None:
        pairs = [(i, index[name]) for i, name in enumerate(GPU_FIELDS)]
        known = [(dst, src) for dst, src in pairs if src is not None]
        self.dst = np.array([d for d, _ in known], dtype=np.intp)
        self.src = np.array([s for _, s in known], dtype=np.intp)
        self.width = len(index)
        self.canonical = index.names == GPU_FIELDS  # rows are the columns as they are


class GpuArena:
    """Preallocated columns for every GPU slot of the fleet."""

    def __init__(self, capacity: int = 64) -> None:
        self.fast = np.full((capacity, _WIDTH), np.nan)
        self.verdict = np.full(capacity, 1, dtype=np.uint8)  # VERDICT_RANK["unknown"]
        self.counted = np.zeros(capacity, dtype=bool)  # counts toward utilization now
        self.used = 0

    def allocate(self, count: int) -> int:
        """``count`` fresh slots; returns the first."""
        start = self.used
        if start + count > len(self.verdict):
            self._grow(grown(len(self.verdict), start + count))
        self.used = start + count
        return start

    def _grow(self, capacity: int) -> None:
        fast = np.full((capacity, _WIDTH), np.nan)
        fast[: self.used] = self.fast[: self.used]
        verdict = np.full(capacity, 1, dtype=np.uint8)
        verdict[: self.used] = self.verdict[: self.used]
        counted = np.zeros(capacity, dtype=bool)
        counted[: self.used] = self.counted[: self.used]
        self.fast, self.verdict, self.counted = fast, verdict, counted

    def clear(self, start: int, count: int) -> None:
        """Forget the readings of a range (a new session starts without values)."""
        self.fast[start : start + count] = np.nan

    def write(self, start: int, count: int, rows: Sequence[Row | None], plan: FastPlan) -> bool:
        """One sample's fast rows of a node with ``count`` GPUs (None: GPU lost or absent).

        Returns:
            True when the rows were one clean rectangle, written in one assignment;
            False when they were written row by row (a lost GPU, a short or long row).
        """
        block = self.fast[start : start + count]
        if len(rows) == count and plan.src.size:
            try:  # every row present and as declared: one conversion for the node
                values = np.array(rows, dtype=np.float64)
                if plan.canonical and values.ndim == 2 and values.shape[1] == _WIDTH:
                    block[:] = values  # the agent's own order: no column shuffle
                else:
                    block[:, plan.dst] = values[:, plan.src]
                return True
            except (ValueError, TypeError, IndexError, OverflowError):
                pass  # a lost GPU, a short or long row: row by row below
        block[:] = np.nan
        for i, row in enumerate(rows[:count]):
            if row is None:
                continue
            width = min(len(row), plan.width)
            keep = plan.src < width
            values = np.array(row[:width], dtype=np.float64)
            block[i, plan.dst[keep]] = values[plan.src[keep]]
        return False

    def freeze(self) -> GpuColumns:
        """This tick's rows, copied: later samples never change a snapshot's columns."""
        used = self.used
        return GpuColumns(self.fast[:used].copy(), self.verdict[:used].copy())

    def utilization_now(self) -> float | None:
        """Mean GPU utilization over the GPUs that count now (None: no reading)."""
        used = self.used
        util = self.fast[:used, UTIL][self.counted[:used]]
        util = util[~np.isnan(util)]
        # Summed in slot order as Python floats: the figure the object path gave, to the bit.
        return sum(util.tolist()) / util.size if util.size else None
