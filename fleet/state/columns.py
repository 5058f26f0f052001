"""The fleet's GPU readings as columns: one preallocated row per GPU slot.

Ingest hands each sample's fast GPU values to ``fast`` (the canonical ``GPU_FIELDS``
order, NaN for a missing value) at the node's slots. Rows already in that order, one
per GPU, are staged and converted for the whole fleet at once before anything reads
the columns (:meth:`GpuArena.flush`): one array per node cost twice the conversion at
1,000 nodes (~9 ms a tick against ~4.5 ms). Other rows are written at once. The state writes
each GPU's verdict rank when it changes. A tick copies the used rows once
(:meth:`GpuArena.freeze`), so history and the utilization figure read arrays, not
thousands of GpuSnapshot objects. Nodes get their slots when their first session
declares its GPUs; a later session with more GPUs gets a fresh range (the old one is
left unused: sessions seldom grow).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

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
        # Whole canonical rows not yet in ``fast``: (first slot, rows), in ingest order.
        self._staged: list[tuple[int, Sequence[Row]]] = []

    def allocate(self, count: int) -> int:
        """``count`` fresh slots; returns the first."""
        self.flush()
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
        self.flush()  # rows staged before the new session must not land after the clear
        self.fast[start : start + count] = np.nan

    def stage(self, start: int, count: int, rows: Sequence[Row | None], plan: FastPlan) -> bool:
        """One sample's fast rows, as :meth:`write` takes them; rows in the canonical
        order, one whole row per GPU, wait for :meth:`flush` (the usual sample).

        Whole rows convert as :meth:`write` converts them: the decoder hands over only
        64-bit ints, bounded floats and None, so a rectangle of them always converts.
        """
        if (
            plan.canonical
            and len(rows) == count
            and count
            and None not in rows
            and all(map(_WIDTH.__eq__, map(len, rows)))  # type: ignore[arg-type]
        ):
            self._staged.append((start, rows))  # type: ignore[arg-type]  # None not in rows
            return True
        self.flush()  # in ingest order: an earlier staged sample of this node first
        return self.write(start, count, rows, plan)

    def flush(self) -> None:
        """Convert every staged row in one pass and put each where its node's slots are."""
        staged, self._staged = self._staged, []
        if not staged:
            return
        counts = [len(rows) for _, rows in staged]
        total = sum(counts)
        values = chain.from_iterable(chain.from_iterable(rows for _, rows in staged))
        try:
            flat = np.fromiter(values, dtype=np.float64, count=total * _WIDTH)
        except (ValueError, TypeError, OverflowError):  # not from the decoder: one by one
            canonical = FastPlan(FieldIndex.of(GPU_FIELDS))
            for start, rows in staged:
                self.write(start, len(rows), rows, canonical)
            return
        matrix = flat.reshape(total, _WIDTH)
        starts = [start for start, _ in staged]
        if len(set(starts)) < len(starts):  # a node sampled twice: its rows in order
            offset = 0
            for start, count in zip(starts, counts, strict=True):
                self.fast[start : start + count] = matrix[offset : offset + count]
                offset += count
            return
        # Each row's slot: its node's first slot plus its place among the node's rows.
        sizes = np.array(counts, dtype=np.intp)
        firsts = np.array(starts, dtype=np.intp) - (np.cumsum(sizes) - sizes)
        self.fast[np.repeat(firsts, sizes) + np.arange(total)] = matrix

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
        self.flush()
        used = self.used
        return GpuColumns(self.fast[:used].copy(), self.verdict[:used].copy())

    def utilization_now(self) -> float | None:
        """Mean GPU utilization over the GPUs that count now (None: no reading)."""
        self.flush()
        used = self.used
        util = self.fast[:used, UTIL][self.counted[:used]]
        util = util[~np.isnan(util)]
        # Summed in slot order as Python floats: the figure the object path gave, to the bit.
        return sum(util.tolist()) / util.size if util.size else None
