"""What the grid reads of a node on screen from the tick's columns, not its GPU objects.

A node backed by the state's rows owns ``rows.gpu_start`` to ``gpu_start + gpu_count``
of ``FleetSnapshot.columns``. Its GPU glyphs need each GPU's facts (the briefs) and its
utilization (a column); its memory figure needs the MiB in use (a column) and each
GPU's memory total. The total is no column but holds for a whole session, and a new
session gives the node a new tuple of briefs, so it is read from the objects once and
kept while the node's briefs are the same tuple. A node without rows (a test's or a
remote snapshot) is drawn from its objects, which it holds anyway.
"""

from __future__ import annotations

from typing import Any

from fleet.facade import GPU_FIELDS, GpuColumns, NodeSnapshot
from fleet.model import GpuBrief
from tui.draw import Cell, gpu_cell, gpu_cells, gpu_glyph

_UTIL, _MEM = GPU_FIELDS.index("util_gpu"), GPU_FIELDS.index("mem_used_mib")
_MIB = 1 << 20


def gpu_block(node: NodeSnapshot, columns: GpuColumns | None) -> Any | None:
    """The node's rows of the tick's fast columns, or None when it has none."""
    rows = node.rows
    if columns is None or rows is None:
        return None
    return columns.fast[rows.gpu_start : rows.gpu_start + node.gpu_count]


def gpu_row_cells(node: NodeSnapshot, columns: GpuColumns | None) -> list[Cell]:
    """One cell per GPU slot, as :func:`tui.draw.gpu_cells` draws them from the objects."""
    block = gpu_block(node, columns)
    if block is None:
        return gpu_cells(node.gpus, node.expected_gpus)
    utils = block[:, _UTIL].tolist()
    cells = list(map(_glyph, node.gpu_briefs, utils))
    if len(cells) != len(utils):
        raise ValueError(f"{node.name}: {len(cells)} GPU facts for {len(utils)} GPU rows")
    cells.extend(gpu_cell(None) for _ in range(max(0, node.expected_gpus - len(cells))))
    return cells


_PLAIN_VERDICTS = frozenset(("ok", "unknown"))  # verdicts whose cell is the bar
_PROBE_FLAGS = frozenset(("fail", "slow", "straggler"))  # findings whose cell is not
# The cell of a plain GPU at each whole percent (NVML reports utilization in whole
# percents): looked up per GPU and tick instead of worked out.
_WHOLE_PCT: dict[float, Cell] = {pct: gpu_glyph(False, "ok", None, pct) for pct in range(101)}


def _glyph(gpu: GpuBrief, util: float) -> Cell:
    """:func:`tui.draw.gpu_glyph` of a GPU from its facts and utilization (NaN: no value)."""
    if gpu.verdict in _PLAIN_VERDICTS and not gpu.lost and gpu.probe_verdict not in _PROBE_FLAGS:
        cell = _WHOLE_PCT.get(util)
        if cell is not None:
            return cell
    return gpu_glyph(gpu.lost, gpu.verdict, gpu.probe_verdict, None if util != util else util)


class MemoryTotals:
    """Each GPU's memory total per node session; entries not asked for in a tick go."""

    def __init__(self) -> None:
        self._now: dict[int, tuple[tuple[GpuBrief, ...], tuple[int | None, ...]]] = {}
        self._last: dict[int, tuple[tuple[GpuBrief, ...], tuple[int | None, ...]]] = {}

    def next_tick(self) -> None:
        """Keep the totals asked for last tick; forget older ones."""
        self._last, self._now = self._now, {}

    def of(self, node: NodeSnapshot) -> tuple[int | None, ...]:
        """The memory total of each GPU of ``node`` (its objects read once a session)."""
        briefs = node.gpu_briefs
        key = id(briefs)
        hit = self._now.get(key) or self._last.get(key)
        if hit is None:  # a key found is these briefs: its entry keeps them alive
            hit = (briefs, tuple(g.memory_total_bytes for g in node.gpus))
        self._now[key] = hit
        return hit[1]


def column_mem_pct(
    node: NodeSnapshot, columns: GpuColumns | None, totals: MemoryTotals
) -> float | None:
    """GPU memory in use over the node's total, percent, as ``node_figures`` works it out
    (used bytes are ``int(MiB * 2**20)`` per GPU; GPUs without a reading are left out)."""
    block = gpu_block(node, columns)
    if block is None:
        raise ValueError(f"{node.name} has no columns")
    used, total, seen = 0, 0, False
    for mib, gpu_total in zip(block[:, _MEM].tolist(), totals.of(node), strict=True):
        if mib == mib:
            used += int(mib * _MIB)
            total += gpu_total or 0
            seen = True
    return 100.0 * used / total if seen and total else None
