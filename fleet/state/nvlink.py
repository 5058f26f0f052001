"""Per-link NVLink CRC counters of a slow tick, advanced as arrays.

A slow tick carries, per GPU, per link, ``[state, replay, recovery, crc_flit, crc_data]``
(``NVLINK_FIELDS``). Each link's CRC count (flit + data) is a cumulative counter with the
rules of :class:`fleet.counters.Counter` (no ceiling): a missing reading keeps the last
good value and has no rate; a value below the last one is a reset, with no rate. At 8
GPUs x 18 links a node holds 144 such counters; advancing them one Python object at a
time was the largest part of a slow tick's ingest. A node whose link rows form one
rectangle is advanced with one array pass; other GPUs (a GPU without links, ragged rows)
one GPU at a time, by the same function.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from collectors.agent.fields import NVLINK_FIELDS
from collectors.protocol import Value

if TYPE_CHECKING:
    from fleet.state.gpu import GpuTrack

_FLIT, _DATA = NVLINK_FIELDS.index("crc_flit"), NVLINK_FIELDS.index("crc_data")
_NAN = math.nan

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


def _known(rates: np.ndarray) -> tuple[float, ...]:
    return tuple(r for r in rates.tolist() if r == r)


def _room(track: GpuTrack, links: int) -> None:
    """Baselines for at least ``links`` links (a link seen for the first time: none)."""
    grow = links - track.link_value.size
    if grow > 0:
        track.link_value = np.concatenate((track.link_value, np.full(grow, _NAN)))
        track.link_at = np.concatenate((track.link_at, np.full(grow, _NAN)))


def take_gpu_links(track: GpuTrack, links: LinkRows | None, t: float) -> None:
    """One GPU's link counters of a slow tick (None: the GPU sent none)."""
    if links is None:
        return
    crc = np.array([_crc_of(link) for link in links], dtype=np.float64)
    count = crc.size
    _room(track, count)
    value, at, rate = advance_crc(track.link_value[:count], track.link_at[:count], crc, t)
    track.link_value[:count], track.link_at[:count] = value, at
    track.take_link_rates(_known(rate))


def take_node_links(tracks: Sequence[GpuTrack], links: Sequence[LinkRows | None], t: float) -> None:
    """Every GPU's link counters of one node's slow tick, one array pass when they fit."""
    count = min(len(tracks), len(links))
    block = _rectangle(links[:count])
    if block is None:
        for track, rows in zip(tracks, links, strict=False):
            take_gpu_links(track, rows, t)
        return
    width = block.shape[1]
    for track in tracks[:count]:
        _room(track, width)
    if any(track.link_value.size != width for track in tracks[:count]):
        for track, rows in zip(tracks, links, strict=False):  # fewer links than before
            take_gpu_links(track, rows, t)
        return
    if block.shape[2] > _DATA:
        flit, data = block[:, :, _FLIT], block[:, :, _DATA]
        crc = np.trunc(np.nan_to_num(flit)) + np.trunc(np.nan_to_num(data))
        crc[np.isnan(flit) & np.isnan(data)] = _NAN
    else:
        crc = np.full(block.shape[:2], _NAN)
    before = np.stack([track.link_value for track in tracks[:count]])
    before_at = np.stack([track.link_at for track in tracks[:count]])
    value, at, rate = advance_crc(before, before_at, crc, t)
    for i, track in enumerate(tracks[:count]):
        track.link_value, track.link_at = value[i], at[i]
        track.take_link_rates(_known(rate[i]))


def _rectangle(links: Sequence[LinkRows | None]) -> np.ndarray | None:
    """The node's link rows as one (GPUs x links x fields) array, or None when ragged."""
    if not links:
        return None
    try:
        block = np.array(links, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        return None  # a GPU without links, a ragged row, a value beyond float range
    return block if block.ndim == 3 and block.shape[1] else None
