"""GPUs' identity and slow readings as columns, read from a tick's rows without building
``SteadyGpu.values`` or a GpuSnapshot.

``fleet.state.build`` works a GPU's steady values out into a list in GpuSnapshot order
once per slow row (every 10 s by default), the first time someone reads it. A scrape
every 15 s and a minute's delivery rows find most of them new: working out every field
of 8,000 GPUs to read a dozen cost ~55 ms of a 1,000-node scrape. Readers that want a
few attributes of many GPUs read them here, one attribute at a time over all the GPUs,
with the conversions ``SteadyGpu`` applies (tests/history/test_steady_columns.py holds
every attribute to ``SteadyGpu.values``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from itertools import repeat
from operator import attrgetter, is_, itemgetter
from typing import Any

from collectors.protocol import GpuInfo, Value
from fleet.model import GpuSnapshot, NodeSnapshot
from fleet.state.build import SLOW_FLAGS, SLOW_FLOATS, SLOW_INTS, QuietSteady, Steady
from fleet.state.layout import FieldIndex, Row, pick
from fleet.state.rows import StateRows

_DEFAULTS: dict[str, object] = {
    f.name: None if f.default is dataclasses.MISSING else f.default
    for f in dataclasses.fields(GpuSnapshot)
}
_FROM_INFO = frozenset(("index", "uuid", "name", "serial", "pci_bus_id", "memory_total_bytes"))
_NVLINK = {"nvlink_crc_rate": 0, "nvlink_replay_delta": 1, "nvlink_recovery_delta": 2}
_QUIET_NVLINK = (0.0, 0, 0)  # a quiet slow tick moved no NVLink count (fleet.state.build)
_CONVERT: dict[str, Callable[[Any], Value]] = {
    **dict.fromkeys(SLOW_INTS, int),
    **dict.fromkeys(SLOW_FLAGS, bool),
    **dict.fromkeys(SLOW_FLOATS, float),
}
STEADY_ATTRIBUTES = frozenset((*_FROM_INFO, *_NVLINK, *_CONVERT, "power_limit_w"))
"""Every GpuSnapshot field a GPU's steady readings set."""
_INFO, _ROW, _INDEX, _LINKS = (attrgetter(a) for a in ("info", "row", "index", "crc_rate"))


def built_gpus(rows: StateRows) -> int:
    """How many GPUs ``StateRows.build`` builds from ``rows`` (its map stops at the
    shortest part; none without a session layout)."""
    if rows.fast is None:
        return 0
    count = min(len(rows.gpu_briefs), len(rows.steady_parts), len(rows.fast_rows))
    return min(count, len(rows.errors)) if rows.errors else count


def state_rows_of(node: NodeSnapshot) -> StateRows | None:
    """``node``'s rows when its GPUs are read from them (not replaced on a copy: a probe
    verdict, a flagged reason), else None (read its objects)."""
    rows = node.rows
    if isinstance(rows, StateRows) and node.gpu_briefs is rows.gpu_briefs:
        return rows
    return None


class SteadyColumns:
    """The steady parts of a sequence of GPUs (node after node), read attribute by attribute."""

    __slots__ = ("_layout", "indexes", "infos", "nvlink", "rows")

    def __init__(self) -> None:
        self.infos: list[GpuInfo] = []
        self.rows: list[Row | None] = []
        self.indexes: list[FieldIndex] = []
        self.nvlink: list[tuple[float | None, int | None, int | None]] = []
        self._layout: tuple[FieldIndex | None] | None = None  # see _one_layout

    def add(self, steady: Steady, count: int) -> None:
        """Add the first ``count`` GPUs of one node's steady parts."""
        self._layout = None
        if isinstance(steady, QuietSteady) and len(steady.infos) == len(steady.rows):
            rows = steady.rows[:count]
            self.infos.extend(steady.infos[:count])
            self.rows.extend(rows)
            self.indexes.extend(repeat(steady.index, len(rows)))
            self.nvlink.extend(repeat(_QUIET_NVLINK, len(rows)))
            return
        gpus = steady.gpus() if isinstance(steady, QuietSteady) else steady
        gpus = gpus[:count]
        self.infos.extend(map(_INFO, gpus))
        self.rows.extend(map(_ROW, gpus))
        self.indexes.extend(map(_INDEX, gpus))
        self.nvlink.extend((g.crc_rate, g.replay, g.recovery) for g in gpus)

    def column(self, attr: str) -> list[Any]:
        """``attr`` of every GPU, as ``SteadyGpu.values`` gives it."""
        if attr in _FROM_INFO:
            return list(map(attrgetter(attr), self.infos))
        at = _NVLINK.get(attr)
        if at is not None:
            return list(map(itemgetter(at), self.nvlink))
        if attr == "power_limit_w":
            return [
                info.power_limit_w if limit is None else float(limit)
                for info, limit in zip(self.infos, self._picked(attr), strict=True)
            ]
        convert = _CONVERT.get(attr)
        if convert is None:
            raise KeyError(f"not a steady GPU attribute: {attr}")
        return self._slow(attr, convert)

    def _one_layout(self) -> FieldIndex | None:
        """The slow field layout every GPU shares when each has a slow row (a fleet of one
        agent version, as a rule), else None; worked out once for all the columns read."""
        if self._layout is None:
            indexes, rows = self.indexes, self.rows
            first = indexes[0] if indexes and None not in rows else None
            if first is not None and not all(map(is_, indexes, repeat(first))):
                first = None
            if first is not None and min(map(len, rows)) < len(first):  # type: ignore[arg-type]
                first = None  # a row shorter than its declared fields: read field by field
            self._layout = (first,)
        return self._layout[0]

    def _picked(self, attr: str) -> list[Value]:
        """The field ``attr`` of every GPU's slow row as sent (None where absent)."""
        index = self._one_layout()
        if index is not None and index[attr] is not None:
            return list(map(itemgetter(index[attr]), self.rows))  # type: ignore[arg-type]
        return [pick(row, index[attr]) for row, index in zip(self.rows, self.indexes, strict=True)]

    def _slow(self, attr: str, convert: Callable[[Any], Value]) -> list[Any]:
        """A slow field converted, or the GpuSnapshot default where the GPU has no slow row
        or its session does not send the field."""
        default = _DEFAULTS[attr]
        index = self._one_layout()
        if index is not None:  # one pass in C per step where every GPU reads alike
            at = index[attr]
            if at is None:
                return [default] * len(self.rows)
            sent = list(map(itemgetter(at), self.rows))  # type: ignore[arg-type]
            if None in sent:
                return [None if value is None else convert(value) for value in sent]
            return list(map(convert, sent))
        values: list[Any] = []
        for row, index in zip(self.rows, self.indexes, strict=True):
            at = index[attr]
            if row is None or at is None:
                values.append(default)
            else:
                value = row[at]
                values.append(None if value is None else convert(value))
        return values
