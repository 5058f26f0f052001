"""A node's slow rows at ingest: one comparison per node when no health fact moved.

Every tenth sample carries each GPU's slow row: reliability state, NVLink error
counters, the power limit. Taken GPU by GPU (:meth:`GpuTrack.apply_slow`) that is three
:class:`fleet.counters.Counter` updates and a dozen field reads per GPU: at 1,000 nodes
of 8 GPUs it made a slow tick cost several fast ones. On a healthy node the rows differ
from the last slow tick's only in fields no rule reads (a PCIe replay count, the ECC
corrected count), and the NVLink error counts did not move.

Then, for the whole node at once: the fields the rules read are compared with the last
slow tick's as one list (C-level), and so are the NVLink counts. When both are equal
and the last slow tick left every GPU's counters with an increment of 0 and a known
rate of 0, a :class:`Counter` update would find each count equal to its value: the
increment stays 0, the rate stays 0.0, and only the reading's time moves. Anything
else (a moved fact or count, a lost GPU, a missing or short row, a new session) takes
the GPU-by-GPU path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from collectors.protocol import Value
from fleet.state.gpu import SLOW_FACTS
from fleet.state.kept import KeptCopies
from fleet.state.layout import FieldIndex, Row

if TYPE_CHECKING:
    from fleet.state.node import NodeTrack

NVLINK_COUNTS = ("nvlink_replay", "nvlink_recovery", "nvlink_crc_flit", "nvlink_crc_data")
# A node keeps its GPUs' facts and counts until they change (most slow ticks are quiet),
# and healthy GPUs' are alike: a tuple each per GPU was ~1.6 MiB at 1,000 nodes.
_KEPT: KeptCopies[tuple[Value, ...]] = KeptCopies(1024)


def take_slow(
    node: NodeTrack, rows: Sequence[Row | None], t: float, received: float, index: FieldIndex
) -> bool:
    """Take a slow tick's rows for the node's GPUs.

    Returns:
        True when no GPU's health facts or NVLink counts moved (only readings the
        rules do not read, and the counters' time).
    """
    tracks = node.gpus
    whole = _whole(rows, len(tracks), len(index))
    facts = counts = None
    if whole:
        # Tuples: kept until they change, and a tuple of numbers is not tracked by the
        # cyclic collector (a list is, two a node).
        facts = tuple(map(index.getter(SLOW_FACTS), rows))  # type: ignore[arg-type]
        counts = tuple(map(index.getter(NVLINK_COUNTS), rows))  # type: ignore[arg-type]
        quiet_at = node.slow_quiet_at
        if (
            node.fast_settled  # no GPU lost: a slow tick judges a lost one again
            and quiet_at is not None
            and t > quiet_at
            and facts == node.slow_facts
            and counts == node.slow_counts
        ):
            for track, row in zip(tracks, rows, strict=True):
                track.slow, track.slow_values = row, None
                track.replay.at = track.recovery.at = track.crc.at = t
            node.slow_quiet_at = t
            node.quiet_slow_rows = rows  # type: ignore[assignment]  # whole: no None
            return True
    node.quiet_slow_rows = None
    for track, srow in zip(tracks, rows, strict=False):
        track.apply_slow(srow, t, received, index)
    if facts is not None and counts is not None:  # kept to the next change: shared copies
        facts, counts = tuple(map(_KEPT.one, facts)), tuple(map(_KEPT.one, counts))
    node.slow_facts, node.slow_counts = facts, counts
    node.slow_quiet_at = t if whole and all(map(_counters_quiet, tracks)) else None
    return False


def _whole(rows: Sequence[Row | None], gpus: int, width: int) -> bool:
    """One full row for every GPU (as the agent sends them)."""
    return len(rows) == gpus and None not in rows and min(map(len, rows), default=0) >= width  # type: ignore[arg-type]


def _counters_quiet(track: object) -> bool:
    """Every NVLink error counter of the GPU moved by 0 at a known rate of 0."""
    for counter in (track.replay, track.recovery, track.crc):  # type: ignore[attr-defined]
        if counter.delta != 0 or counter.rate != 0.0:
            return False
    return True
