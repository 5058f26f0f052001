"""Per-link NVLink CRC counters of a slow tick, advanced as arrays.

A slow tick carries, per GPU, per link, ``[state, replay, recovery, crc_flit, crc_data]``
(``NVLINK_FIELDS``). Each link's CRC count (flit + data) is a cumulative counter with the
rules of :class:`fleet.counters.Counter` (no ceiling): a missing reading keeps the last
good value and has no rate; a value below the last one is a reset, with no rate. At 8
GPUs x 18 links a node holds 144 such counters; advancing them one Python object at a
time was the largest part of a slow tick's ingest. A node's counters are one array
(:class:`NodeLinks`) advanced in one pass; a GPU without links or with a different
link count than its peers goes one GPU at a time through the same function. Values are
float64: a count beyond 2**53 loses its last digits (CRC counts never get there).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

from collectors.agent.fields import NVLINK_FIELDS
from collectors.protocol import Value
from fleet.state.kept import KeptCopies

if TYPE_CHECKING:
    from fleet.state.gpu import GpuTrack

_FLIT, _DATA = NVLINK_FIELDS.index("crc_flit"), NVLINK_FIELDS.index("crc_data")
_NAN = math.nan
_FLIT_OF, _DATA_OF = itemgetter(_FLIT), itemgetter(_DATA)

LinkRows = Sequence[Sequence[Value]]


def advance_crc(
    value: np.ndarray, at: np.ndarray, crc: np.ndarray, t: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counters with last good ``value`` at ``at`` take the readings ``crc`` at ``t``.

    Returns:
        The new last values, their times, and the rates (NaN: unknown).
    """
    present = ~np.isnan(crc)
    compared = present & ~np.isnan(value) & ~np.isnan(at)
    with np.errstate(invalid="ignore"):
        reset = compared & (crc < value)
        elapsed = t - at
        timed = compared & ~reset & (elapsed > 0)
        rate = np.where(timed, (crc - value) / np.where(timed, elapsed, 1.0), np.nan)
    return np.where(present, crc, value), np.where(present, t, at), rate


def _crc_of(link: Sequence[Value]) -> float:
    """flit + data, each truncated to an integer; NaN when the link sent neither."""
    if len(link) <= _DATA:
        return _NAN
    flit, data = link[_FLIT], link[_DATA]
    if flit is None and data is None:
        return _NAN
    return float(int(flit or 0) + int(data or 0))


def _gpu_counts(rows: LinkRows) -> list[float]:
    """One GPU's CRC count per link (what _crc_of gives, without a call per link)."""
    if not rows or min(map(len, rows)) <= _DATA:
        return [_crc_of(link) for link in rows]
    return [
        _NAN if f is None and d is None else float(int(f or 0) + int(d or 0))
        for f, d in zip(map(_FLIT_OF, rows), map(_DATA_OF, rows), strict=True)
    ]


# A node keeps its last slow tick's link rows to compare the next one with (one C compare
# when nothing moved). Healthy links send the same row (up, no replay, no recovery, no
# CRC error) on every GPU of every node, so the GPUs' rows are kept as one shared copy
# per distinct value: one per GPU was 144 tuples per node, ~12 MiB at 1,000 nodes of
# 8 GPUs x 18 links.
_SHARED_ROWS: KeptCopies[LinkRows] = KeptCopies(1024)


def _shared(rows: LinkRows | None) -> LinkRows | None:
    """``rows``, or an equal copy some GPU sent before (the one kept)."""
    if rows is None:
        return None
    try:
        return _SHARED_ROWS.one(rows)
    except TypeError:  # not hashable (built in Python, not by the decoder): kept as is
        return rows


# Healthy links' rates are all 0 on every GPU. A tuple of fresh floats per GPU (18 links)
# was kept for the life of the session, as an equal tuple never replaces it: ~5 MiB at
# 1,000 nodes of 8 GPUs. One tuple per link count serves them all.
@lru_cache(maxsize=64)
def _zeros(links: int) -> tuple[float, ...]:
    return (0.0,) * links


def _link_rates(rates: list[float], whole: bool) -> tuple[float, ...]:
    """A GPU's known rates in link order (the shared zeros when every one is 0);
    ``whole``: none of ``rates`` is NaN."""
    if whole:
        return _zeros(len(rates)) if not any(rates) else tuple(rates)
    return tuple(r for r in rates if r == r)


def _known(rates: np.ndarray) -> tuple[float, ...]:
    return _link_rates(rates.tolist(), not np.isnan(rates).any())


class NodeLinks:
    """One session's per-link CRC baselines: GPUs x links, NaN where none yet.

    Built from the GPUs' own baselines when a session starts and handed back to them
    when it ends (a baseline follows the GPU's identity, not its index).
    """

    __slots__ = ("at", "crc", "quiet", "rows", "value")

    def __init__(self, tracks: Sequence[GpuTrack]) -> None:
        width = max((track.link_value.size for track in tracks), default=0)
        self.value = np.full((len(tracks), width), _NAN)
        self.at = np.full((len(tracks), width), _NAN)
        for i, track in enumerate(tracks):
            size = track.link_value.size
            self.value[i, :size], self.at[i, :size] = track.link_value, track.link_at
        # Each GPU's last link rows (tuples of tuples of numbers, as the decoder gives
        # them: the collector stops scanning them) and their CRC counts.
        self.rows: list[LinkRows | None] | None = None
        self.crc: np.ndarray = np.zeros((0, 0))
        # The last slow tick's time when every link had a known rate of 0 (else None):
        # the same counts again later give 0 everywhere (see _quiet_again).
        self.quiet: float | None = None

    def hand_back(self, tracks: Sequence[GpuTrack]) -> None:
        """The session ends: each GPU keeps its baselines for its next session."""
        for i, track in enumerate(tracks):
            track.link_value, track.link_at = self.value[i].copy(), self.at[i].copy()

    def take(self, tracks: Sequence[GpuTrack], links: Sequence[LinkRows | None], t: float) -> bool:
        """Every GPU's link counters of one slow tick: one array pass when they fit.

        A GPU's link rows equal to the last slow tick's (the usual case: no CRC error)
        are not read again.

        Returns:
            True when every link's rate was 0 and stays 0 (no GPU's link facts moved).
        """
        count = min(len(tracks), len(links))
        last = self.crc
        crc = self._counts(links, count)
        if crc is None:
            self.rows, self.quiet = None, None
            self._take_one_by_one(tracks, links, t)
            return False
        self.crc = crc
        if crc is last and self._quiet_again(count, crc.shape[1], t):
            zeros = _zeros(crc.shape[1])
            for track in tracks[:count]:
                track.take_link_rates(zeros)
            return count == len(tracks)
        rate = self._advance(slice(0, count), crc, t)
        whole = (~np.isnan(rate).any(axis=1)).tolist()  # every link's rate known
        # Every rate known and 0: the counts equal the baselines, each taken at t.
        self.quiet = t if all(whole) and not rate.any() else None
        for track, known, full in zip(tracks[:count], rate.tolist(), whole, strict=True):
            track.take_link_rates(_link_rates(known, full))
        return False

    def _quiet_again(self, count: int, width: int, t: float) -> bool:
        """Counts equal to the last slow tick's, which left every rate known and 0.

        Then :func:`advance_crc` would find each count equal to its baseline, taken at
        the last tick: every rate is 0 again once time moved on, and only the baselines'
        time moves. The arrays are not read at all.
        """
        quiet = self.quiet
        if quiet is None or not t > quiet:
            return False
        self.at[:count, :width] = t
        self.quiet = t
        return True

    def _counts(self, links: Sequence[LinkRows | None], count: int) -> np.ndarray | None:
        """The CRC counts (GPUs x links); a GPU's rows equal to last time are not read."""
        last, counts = self.rows, self.crc
        sent = links[:count]
        fits = last is not None and len(last) == count and counts.shape[0] == count
        # The usual slow tick: no GPU's link rows moved. One C compare with the kept rows,
        # before any is hashed to find its shared copy (which cost twice the compare).
        if fits and last == list(sent):
            return counts
        seen = [_shared(rows) for rows in sent]
        self.rows = seen
        if not fits or last is None:
            return _counts(sent)
        for i, (now, before) in enumerate(zip(seen, last, strict=True)):
            if now == before:
                continue
            rows = links[i]
            if rows is None or len(rows) != counts.shape[1]:
                return None
            if counts is self.crc:
                counts = counts.copy()
            counts[i] = _gpu_counts(rows)
        return counts

    def _advance(self, gpus: slice | int, crc: np.ndarray, t: float) -> np.ndarray:
        width = crc.shape[-1]
        self._widen(width)
        value, at = self.value[gpus, :width], self.at[gpus, :width]
        value, at, rate = advance_crc(value, at, crc, t)
        self.value[gpus, :width], self.at[gpus, :width] = value, at
        return rate

    def _widen(self, width: int) -> None:
        grow = width - self.value.shape[1]
        if grow > 0:  # a link seen for the first time: no baseline
            pad = np.full((self.value.shape[0], grow), _NAN)
            self.value = np.hstack((self.value, pad))
            self.at = np.hstack((self.at, pad))

    def _take_one_by_one(
        self, tracks: Sequence[GpuTrack], links: Sequence[LinkRows | None], t: float
    ) -> None:
        for i, (track, rows) in enumerate(zip(tracks, links, strict=False)):
            if rows is None:
                continue  # the GPU sent none: its baselines and rates stay
            crc = np.array([_crc_of(link) for link in rows], dtype=np.float64)
            track.take_link_rates(_known(self._advance(i, crc, t)))


def _counts(links: Sequence[LinkRows | None]) -> np.ndarray | None:
    """Per GPU, per link, the CRC count; None when a GPU sent none or the GPUs differ."""
    if not links or any(rows is None for rows in links):
        return None
    counts = [_gpu_counts(rows) for rows in links]  # type: ignore[arg-type]
    if len({len(row) for row in counts}) != 1:
        return None
    return np.array(counts, dtype=np.float64).reshape(len(counts), len(counts[0]))
