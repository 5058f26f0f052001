"""Where each field sits in a session's sample arrays (from the node's ``hello``).

The agent declares its field orders in ``hello``; a controller never guesses. A field
the agent does not send maps to ``None`` and reads as a missing value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TypeVar

import msgspec

from collectors.protocol import GpuInfo, Hello, PortInfo, Value
from fleet.state.kept import KeptCopies

Row = Sequence[Value]


def pick(row: Row | None, index: int | None) -> Value:
    """``row[index]``, or None when the row or the field is missing."""
    if row is None or index is None or index >= len(row):
        return None
    return row[index]


def pick_int(row: Row | None, index: int | None) -> int | None:
    """The field as an int (agents may send 3.0 for 3), or None."""
    value = pick(row, index)
    return None if value is None else int(value)


def pick_flag(row: Row | None, index: int | None) -> bool | None:
    """The field as a flag (0/1), or None."""
    value = pick(row, index)
    return None if value is None else bool(value)


@dataclass(frozen=True, slots=True)
class FieldIndex:
    """Name -> position of one declared field list."""

    names: tuple[str, ...]
    positions: dict[str, int]
    plans: dict[tuple[str, ...], tuple[tuple[str, int], ...]] = field(default_factory=dict)
    route_cache: dict[tuple[str, ...], tuple[tuple[int, int], ...]] = field(default_factory=dict)
    getters: dict[tuple[str, ...], Callable[[Row], tuple[Value, ...]]] = field(
        default_factory=dict, compare=False
    )
    subsets: dict[frozenset[str], tuple[str, ...]] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, names: Sequence[str]) -> FieldIndex:
        return cls(tuple(names), {name: i for i, name in enumerate(names)})

    def plan(self, names: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
        """(name, position) of those ``names`` this session sends, computed once per name set."""
        cached = self.plans.get(names)
        if cached is None:
            cached = tuple((n, self.positions[n]) for n in names if n in self.positions)
            self.plans[names] = cached
        return cached

    def without(self, dropped: frozenset[str]) -> tuple[str, ...]:
        """The declared names not in ``dropped``, in order: one tuple per index and set,
        so the ports of every session sharing this index share it too."""
        cached = self.subsets.get(dropped)
        if cached is None:
            cached = self.subsets[dropped] = tuple(n for n in self.names if n not in dropped)
        return cached

    def routes(
        self, names: tuple[str, ...], targets: dict[str, int]
    ) -> tuple[tuple[int, int], ...]:
        """(target position, row position) of those ``names`` this session sends, cached.

        ``targets`` must be the same mapping for the same ``names`` (a module constant).
        """
        cached = self.route_cache.get(names)
        if cached is None:
            cached = tuple((targets[n], i) for n, i in self.plan(names))
            self.route_cache[names] = cached
        return cached

    def getter(self, names: tuple[str, ...]) -> Callable[[Row], tuple[Value, ...]]:
        """Reads those ``names`` this session sends from a padded row as one tuple (cached).

        Comparing two rows' tuples compares just those fields, in C.
        """
        cached = self.getters.get(names)
        if cached is None:
            positions = [i for _, i in self.plan(names)]
            if len(positions) > 1:
                cached = itemgetter(*positions)
            else:
                cached = lambda row: tuple(row[i] for i in positions)  # noqa: E731
            self.getters[names] = cached
        return cached

    def pad(self, row: Row) -> Row:
        """A row at least as long as the declared fields (a short row reads as missing)."""
        missing = len(self.names) - len(row)
        return row if missing <= 0 else [*row, *([None] * missing)]

    def __getitem__(self, name: str) -> int | None:
        return self.positions.get(name)

    def __len__(self) -> int:
        return len(self.names)


@dataclass(frozen=True, slots=True)
class Layout:
    """The field orders of one agent session."""

    gpu: FieldIndex
    slow: FieldIndex
    port: FieldIndex
    nic: FieldIndex

    @classmethod
    def from_hello(cls, hello: Hello) -> Layout:
        return session_layout(hello)[0]


# Every node running one agent version declares the same four field lists. One Layout
# (and one copy of the lists) serves all their sessions: per node they were ~8 KiB of
# dicts, tuples and strings, 8 MiB at 1,000 nodes (bench/lib/memory_account.py). A fleet of
# agents that keep declaring new lists gets layouts of its own past this many.
_KEPT_LAYOUTS = 64
_FieldLists = tuple[list[str], list[str], list[str], list[str]]
_layouts: dict[tuple[tuple[str, ...], ...], tuple[Layout, _FieldLists]] = {}


def session_layout(hello: Hello) -> tuple[Layout, Hello]:
    """The layout of ``hello``'s session, and ``hello`` holding the field lists that
    every session with the same lists shares (read, never written) and the kept copy
    of each value nodes send alike (:func:`_with_shared_values`)."""
    lists: _FieldLists = (
        hello.gpu_fields,
        hello.gpu_slow_fields,
        hello.port_fields,
        hello.nic_fields,
    )
    key = tuple(tuple(names) for names in lists)
    kept = _layouts.get(key)
    if kept is None:
        layout = Layout(*(FieldIndex.of(names) for names in key))
        if len(_layouts) >= _KEPT_LAYOUTS:
            return layout, _with_shared_values(hello)
        kept = _layouts[key] = (layout, lists)
    layout, shared = kept
    gpu, slow, port, nic = shared
    if gpu is not hello.gpu_fields:
        hello = msgspec.structs.replace(
            hello, gpu_fields=gpu, gpu_slow_fields=slow, port_fields=port, nic_fields=nic
        )
    return layout, _with_shared_values(hello)


# What most nodes of a fleet send alike (the GPU model, PCI slots, port names, kinds and
# link layers, the driver's version) was a fresh string or number per GPU and port from
# the decoder, kept for the session: ~3 MiB at 1,000 nodes.
_T = TypeVar("_T")
_VALUES: KeptCopies[tuple[type, object]] = KeptCopies(4096)


def _one(value: _T) -> _T:
    """``value``, or an equal one of the same type kept before."""
    if value is None:
        return value
    # Typed: 700 and 700.0 are equal keys, but not the same value.
    return _VALUES.one((type(value), value))[1]  # type: ignore[return-value]


# The fields of each struct that most nodes send alike.
_HELLO_ALIKE = ("agent", "driver", "cuda", "nvml", "python")
_GPU_ALIKE = ("name", "pci_bus_id", "memory_total_bytes", "power_limit_w")
_PORT_ALIKE = ("name", "kind", "link_layer", "netdev")
_S = TypeVar("_S", Hello, GpuInfo, PortInfo)


def _alike(struct: _S, fields: tuple[str, ...], **more: object) -> _S:
    kept = {name: _one(getattr(struct, name)) for name in fields}
    return msgspec.structs.replace(struct, **kept, **more)


def _with_shared_values(hello: Hello) -> Hello:
    """``hello`` holding the kept copy of each value nodes send alike (see _one)."""
    return _alike(
        hello,
        _HELLO_ALIKE,
        gpus=[_alike(info, _GPU_ALIKE) for info in hello.gpus],
        ports=[_alike(info, _PORT_ALIKE) for info in hello.ports],
        nics=[_alike(info, _PORT_ALIKE) for info in hello.nics],
    )
