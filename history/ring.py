"""Full-resolution samples of a tick: narrow columns, GPUs as registry keys.

A tick's GPU values are pulled out of the snapshot one column at a time into numpy
arrays of the narrowest dtype that holds them (:data:`TickColumns`); the GPUs'
identities live once in a shared :class:`Layout`, not in every row. The recorder's
readers (the ring, the minute's sums) take the arrays as they are: wrapping them in a
polars frame every tick cost ~0.2 ms of 8,000 GPUs' ~2.5 ms and nobody read it. A value
that could not be read is kept as a sentinel (255 for uint8 columns, NaN for floats,
``MEM_NULL`` for memory) so a tick costs no validity bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import polars as pl

from collectors.agent.fields import GPU_FIELDS
from fleet.model import (
    VERDICT_RANK,
    VERDICTS,
    FleetSnapshot,
    GpuBrief,
    GpuColumns,
    NodeSnapshot,
)
from history.steady_columns import SteadyColumns, built_gpus, state_rows_of

U8_NULL = 255
MEM_NULL = np.iinfo(np.uint32).max
MIB = 1 << 20
# A verdict is stored as its severity rank, so the worst verdict of a set is the maximum.
VERDICT_OF_RANK: dict[int, str] = {VERDICT_RANK[v]: v for v in VERDICTS}


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """Who a GPU row belongs to."""

    node: str
    gpu: int
    uuid: str
    serial: str | None = None
    pci_bus_id: str | None = None


@dataclass(frozen=True, slots=True)
class Layout:
    """The GPUs of a tick in row order, as keys into the :class:`GpuRegistry`."""

    signature: tuple[tuple[str, int], ...]
    keys: np.ndarray
    contiguous: bool  # keys are exactly 0..n-1, so accumulators can use a slice

    def row_of(self, key: int) -> int | None:
        """The row of GPU ``key`` in frames of this layout, or None."""
        if self.contiguous:
            return key if key < len(self.keys) else None
        hits = np.flatnonzero(self.keys == key)
        return int(hits[0]) if hits.size else None


class GpuRegistry:
    """Stable small integer keys for (node, GPU index), assigned on first sight."""

    def __init__(self) -> None:
        self.identities: list[GpuIdentity] = []
        self._keys: dict[tuple[str, int], int] = {}
        self._layout: Layout | None = None
        self._frame: pl.DataFrame | None = None  # identities as columns, rebuilt on change
        self._buses: tuple[NodeSnapshot, dict[int, str | None]] | None = None  # the last node's

    def key(self, node: str, gpu: int) -> int | None:
        """The key of ``node``'s GPU ``gpu``, or None if never seen."""
        return self._keys.get((node, gpu))

    def layout_of(self, nodes: Sequence[NodeSnapshot]) -> Layout:
        """The layout of a tick; reused while the fleet's shape does not change."""
        signature = tuple(zip(map(_NAME, nodes), map(_GPU_COUNT, nodes), strict=True))
        if self._layout is not None and self._layout.signature == signature:
            return self._layout
        keys = np.fromiter(
            (self._key_for(n, g) for n in nodes for g in n.gpu_briefs), dtype=np.uint32
        )
        contiguous = bool(np.array_equal(keys, np.arange(len(keys), dtype=np.uint32)))
        self._layout = Layout(signature, keys, contiguous)
        self._buses = None
        return self._layout

    def _key_for(self, node: NodeSnapshot, gpu: GpuBrief) -> int:
        slot = (node.name, gpu.index)
        key = self._keys.get(slot)
        if key is None:
            key = self._keys[slot] = len(self.identities)
            self.identities.append(self._identity(node, gpu))
            self._frame = None
        elif (self.identities[key].uuid, self.identities[key].serial) != (gpu.uuid, gpu.serial):
            self.identities[key] = self._identity(node, gpu)  # the GPU in that slot was swapped
            self._frame = None
        return key

    def _identity(self, node: NodeSnapshot, gpu: GpuBrief) -> GpuIdentity:
        # The bus id is not on the brief: read once per node that brings a new identity.
        if self._buses is None or self._buses[0] is not node:
            self._buses = (node, _bus_ids(node))
        bus = self._buses[1].get(gpu.index)
        return GpuIdentity(node.name, gpu.index, gpu.uuid, gpu.serial, bus)

    def identity_frame(self) -> pl.DataFrame:
        """``node``, ``gpu``, ``uuid``, ``serial``, ``pci_bus_id``, one row per key (row
        number = key)."""
        if self._frame is None:
            self._frame = pl.DataFrame(
                {
                    "node": [i.node for i in self.identities],
                    "gpu": [i.gpu for i in self.identities],
                    "uuid": [i.uuid for i in self.identities],
                    "serial": [i.serial for i in self.identities],
                    "pci_bus_id": [i.pci_bus_id for i in self.identities],
                },
                schema={
                    "node": pl.String(),
                    "gpu": pl.UInt16(),
                    "uuid": pl.String(),
                    "serial": pl.String(),
                    "pci_bus_id": pl.String(),
                },
            )
        return self._frame


_NAME, _GPU_COUNT = attrgetter("name"), attrgetter("gpu_count")


def _bus_ids(node: NodeSnapshot) -> dict[int, str | None]:
    """Each GPU index's PCI bus id (the first GPU's of an index), from the node's rows
    where the state has them: building the fleet's GPU objects for them at the first
    tick cost ~0.1 s at 1,000 nodes."""
    rows = state_rows_of(node)
    pairs: Iterable[tuple[int, str | None]]
    if rows is not None:
        steady = SteadyColumns()
        steady.add(rows.steady_parts, built_gpus(rows))
        pairs = zip(steady.column("index"), steady.column("pci_bus_id"), strict=True)
    else:
        pairs = ((g.index, g.pci_bus_id) for g in node.gpus)
    buses: dict[int, str | None] = {}
    for index, bus in pairs:
        buses.setdefault(index, bus)
    return buses


def _floats(values: list[float | int | None]) -> np.ndarray:
    try:  # the common case, every value read: fromiter is the cheapest conversion
        return np.fromiter(values, dtype=np.float64, count=len(values))
    except TypeError:  # a None among them: np.array turns it into NaN, our sentinel
        return np.array(values, dtype=np.float64)


def _u8(values: np.ndarray) -> np.ndarray:
    out = np.full(values.shape, U8_NULL, dtype=np.uint8)
    known = ~np.isnan(values)
    out[known] = np.clip(np.rint(values[known]), 0, U8_NULL - 1)
    return out


TickColumns = dict[str, np.ndarray]
"""A tick's values by column (``util``, ``sm_active``, ``mem_mib``, ``power_w``,
``temp_c``, ``verdict``), one row per GPU of its layout."""


def tick_columns(nodes: Sequence[NodeSnapshot]) -> TickColumns:
    """A row per GPU of ``nodes`` (in node, then GPU order), narrow dtypes."""
    gpus = [g for n in nodes for g in n.gpus]
    return _columns(
        _floats([g.util_gpu for g in gpus]),
        _floats([g.sm_active for g in gpus]),
        _floats([g.mem_used_bytes for g in gpus]) / MIB,
        _floats([g.power_w for g in gpus]),
        _floats([g.temp_c for g in gpus]),
        np.fromiter([VERDICT_RANK[g.verdict] for g in gpus], dtype=np.uint8, count=len(gpus)),
    )


_RECORDED = ("util_gpu", "sm_active", "mem_used_mib", "power_w", "temp_c")
_UTIL, _SM, _MEM, _POWER, _TEMP = (GPU_FIELDS.index(name) for name in _RECORDED)


def column_rows(nodes: Sequence[NodeSnapshot]) -> np.ndarray | None:
    """The rows of ``nodes``' GPUs in the tick's columns (None: a node has no rows)."""
    starts = []
    for node in nodes:
        rows = node.rows
        if rows is None:
            return None
        starts.append(np.arange(rows.gpu_start, rows.gpu_start + node.gpu_count))
    return np.concatenate(starts) if starts else np.zeros(0, dtype=np.intp)


def columns_frame(columns: GpuColumns, rows: np.ndarray) -> TickColumns:
    """:func:`tick_columns` read from the state's columns instead of GPU objects."""
    fast = columns.fast[rows]
    return _columns(
        fast[:, _UTIL],
        fast[:, _SM],
        fast[:, _MEM],
        fast[:, _POWER],
        fast[:, _TEMP],
        columns.verdict[rows],
    )


class ColumnReader:
    """Tick frames from a snapshot's columns, with the row index kept while slots hold."""

    def __init__(self) -> None:
        self._key: tuple[Layout, tuple[int | None, ...]] | None = None
        self._rows: np.ndarray | None = None

    def frame(self, snapshot: FleetSnapshot, layout: Layout) -> TickColumns | None:
        """The tick's values, or None when the snapshot carries no columns."""
        columns = snapshot.columns
        if columns is None:
            return None
        starts = tuple(None if n.rows is None else n.rows.gpu_start for n in snapshot.nodes)
        key = self._key
        if key is None or key[0] is not layout or key[1] != starts:
            self._key, self._rows = (layout, starts), column_rows(snapshot.nodes)
        return None if self._rows is None else columns_frame(columns, self._rows)


def _frame(*arrays: np.ndarray) -> pl.DataFrame:
    """:func:`_columns`' arrays as a frame: the frame-per-tick ring's (bench/bench_ring.py's
    baseline)."""
    return pl.DataFrame(_columns(*arrays))


def _columns(
    util: np.ndarray,
    sm_active: np.ndarray,
    mem: np.ndarray,
    power: np.ndarray,
    temp: np.ndarray,
    verdict: np.ndarray,
) -> TickColumns:
    mem_mib = np.full(mem.shape, MEM_NULL, dtype=np.uint32)
    known = ~np.isnan(mem)
    mem_mib[known] = np.rint(mem[known])
    return {
        "util": _u8(util),
        "sm_active": sm_active.astype(np.float32),
        "mem_mib": mem_mib,
        "power_w": power.astype(np.float32),
        "temp_c": _u8(temp),
        "verdict": verdict,
    }


@dataclass(frozen=True, slots=True)
class TickFrame:
    """The samples of one tick: when, whose rows, and the values by column."""

    t: float
    layout: Layout
    columns: TickColumns

    @property
    def frame(self) -> pl.DataFrame:
        """The values as one polars frame (built when asked: the recorder reads arrays)."""
        return pl.DataFrame(self.columns)
