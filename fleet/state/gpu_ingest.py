"""A sample's GPU side at ingest: one array write per node, Python only where facts move.

The fast rows of a node's sample go into the fleet's columns in one assignment
(:meth:`fleet.state.columns.GpuArena.write`). While a node is *settled* (every GPU
sampled and answering, no session just begun), the clock-event reasons are all a GPU's
health facts can take from a fast row: the node's reasons are compared with the last
ones as one list (numpy's per-call cost is larger than the work on 8 values), and
GPUs whose reasons did not move are not visited in Python at all, and the rows stay as the decoder
made them (the node keeps the sample's list; nothing ever writes into it). Anything
else (a lost GPU, a short or missing row, the first sample of a session) takes the exact
path, one GPU at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from collectors.protocol import Sample
from fleet.state.layout import Layout, Row, pick, pick_int
from fleet.state.slow_ingest import take_slow

if TYPE_CHECKING:
    from fleet.state.node import NodeTrack


def take_gpus(node: NodeTrack, sample: Sample, layout: Layout, received: float) -> bool:
    """Take a sample's fast, slow and link rows for the node's GPUs.

    Returns:
        True when no GPU's facts or errors can have moved (readings aside: the fast
        ones, and slow ones no rule reads): the node's last judgement holds.
    """
    rows = sample.gpus
    clean = False
    if node.fast_plan is not None:
        clean = node.arena.stage(node.gpu_start, len(node.gpus), rows, node.fast_plan)
    if clean and node.fast_settled and not sample.lost and _full(rows, layout):
        node.fast_rows = rows
        quiet = _take_clocks(node, rows, layout.gpu["clock_reasons"], received)
    else:
        _take_rows_one_by_one(node, rows, sample.lost, layout, received)
        quiet = False
    quiet = _take_errors(node, sample.errs) and quiet
    if sample.slow is not None:
        node.steady_stale = True  # the snapshot shows the new rows
        quiet = take_slow(node, sample.slow, sample.t, received, layout.slow) and quiet
    if sample.links is not None:
        quiet = node.links.take(node.gpus, sample.links, sample.t) and quiet
    return quiet


def _take_clocks(node: NodeTrack, rows: Sequence[Row | None], clock: int | None, at: float) -> bool:
    """Clock-event reasons: one list comparison; a GPU is visited only where one moved.

    Returns:
        True when no GPU's reasons moved.
    """
    if clock is None:
        return True  # the session does not send them: the facts hold None already
    clocks = [row[clock] for row in rows]  # type: ignore[index]
    last = node.clocks
    if clocks == last:
        return True
    for i, (now, before) in enumerate(zip(clocks, last or [], strict=False)):
        if now != before:
            node.gpus[i].apply_fast(None if now is None else int(now), False, at)
    node.clocks = clocks
    return False


def _full(rows: Sequence[Row | None], layout: Layout) -> bool:
    """Do the rows (one rectangle) hold at least every declared field?"""
    first = rows[0] if rows else None
    return first is not None and len(first) >= len(layout.gpu)


def _take_rows_one_by_one(
    node: NodeTrack, rows: Sequence[Row | None], lost: Sequence[int], layout: Layout, at: float
) -> None:
    clock, width, n_rows = layout.gpu["clock_reasons"], len(layout.gpu), len(rows)
    kept: list[Row | None] = []
    settled = True
    for i, track in enumerate(node.gpus):
        row = rows[i] if i < n_rows else None
        if row is not None:
            # Kept for a second as a tuple of numbers: the collector stops tracking it
            # after one pass, where a list would be scanned by every collection.
            row = tuple(row) if len(row) >= width else tuple(layout.gpu.pad(row))
        gone = row is None or i in lost
        track.apply_fast(None if gone else pick_int(row, clock), gone, at)
        settled = settled and not track.facts.lost
        kept.append(row)
    node.fast_rows = tuple(kept)
    node.fast_settled = settled
    # What the facts hold now, compared with the next sample's (see _take_clocks).
    node.clocks = [pick(row, clock) for row in kept] if settled else None


def _take_errors(node: NodeTrack, errs: Mapping[str, Mapping[str, str]]) -> bool:
    """Field errors hold until the GPU's next sample (most samples have none).

    Returns:
        True when no GPU held errors and none came.
    """
    quiet = not node.had_errors and not errs
    if node.had_errors:
        for cleared in node.gpus:
            cleared.errors = ()
        node.had_errors = False
    for key, fields in errs.items():
        track = node.gpu_at(key)
        if track is not None:
            track.errors = tuple(sorted(fields.items()))
            node.had_errors = True
    return quiet
