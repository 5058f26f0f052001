"""Fields of a frozen, slotted dataclass that are built on first read.

``FleetState`` hands out NodeSnapshots whose ``gpus``, ``ports`` and ``nics`` hold
:data:`PENDING`: the tuple is built from the node's :class:`NodeRows` the first time
someone reads it and cached in the slot (a pure function of frozen rows, so a race
between two threads builds it twice and keeps either).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fleet.briefs import GpuBrief, PortAlarms, PortBrief


class NodeRows(Protocol):
    """A node's readings frozen at one tick, from which its GPU and port objects are built.

    ``FleetState`` hands out NodeSnapshots backed by rows: the tuples ``gpus``, ``ports``
    and ``nics`` are built on first access only (most ticks nobody reads them: a tick's
    readers use the briefs and the fleet's columns).
    """

    gpu_briefs: tuple[GpuBrief, ...]
    port_briefs: tuple[PortBrief, ...]
    nic_briefs: tuple[PortBrief, ...]
    gpu_start: int  # the node's first row in ``FleetSnapshot.columns``

    def build(self, which: str) -> tuple[Any, ...]:
        """The ``gpus``, ``ports`` or ``nics`` tuple (built once, then the same object)."""
        ...

    def built(self, which: str) -> tuple[Any, ...] | None:
        """The tuple ``build(which)`` returned, or None when it was never asked for."""
        ...

    def port_alarms(self) -> tuple[PortAlarms, ...]:
        """Each fabric port's error readings, without building the ports."""
        ...


class _Pending(tuple):
    """The marker a lazy NodeSnapshot field holds until its tuple is built."""

    __slots__ = ()


PENDING: Any = _Pending()


class _LazyTuple:
    """A NodeSnapshot field that is built from the node's rows when it holds PENDING."""

    __slots__ = ("name", "slot")

    def __init__(self, name: str, slot: Any) -> None:
        self.name, self.slot = name, slot

    def __get__(self, node: Any, owner: type | None = None) -> Any:
        if node is None:
            return self
        value = self.slot.__get__(node, owner)
        if value is PENDING:
            rows = node.rows
            value = () if rows is None else rows.build(self.name)
            self.slot.__set__(node, value)  # a cache of a pure function of frozen rows
        return value

    def __set__(self, node: Any, value: Any) -> None:
        self.slot.__set__(node, value)


def install_lazy_fields(cls: type, names: tuple[str, ...]) -> dict[str, Any]:
    """Make the slots ``names`` of dataclass ``cls`` lazy; returns their raw descriptors."""
    raw = {name: cls.__dict__[name] for name in names}
    for name, slot in raw.items():
        setattr(cls, name, _LazyTuple(name, slot))
    return raw


def evolved(obj: Any, raw: dict[str, Any], changes: dict[str, Any]) -> Any:
    """A copy of dataclass ``obj`` with ``changes``, lazy fields passed on unread."""
    # Unread fields pass on unbuilt only while the copy keeps the rows they are built from.
    keep = "rows" not in changes or changes["rows"] is getattr(obj, "rows", None)
    values = {
        f.name: raw[f.name].__get__(obj, type(obj))
        if keep and f.name in raw
        else getattr(obj, f.name)
        for f in fields(obj)
        if f.init
    }
    values.update(changes)
    return type(obj)(**values)


def copier(cls: type, raw: dict[str, Any]) -> Callable[[Any, Any, Any, Any], Any]:
    """A function ``(obj, last_seen, sampled_at, rows)``: a copy of ``obj`` (a ``cls``)
    with those three fields set and its lazy fields PENDING, built from its new rows.

    The copy is written slot by slot, without ``__init__``: a frozen dataclass sets each
    of its fields through ``object.__setattr__``, which costs twice the copy. The writes
    are spelled out one per slot in a function made here (as ``dataclasses`` makes
    ``__init__``): a loop over the slots cost a third more, once per node and tick.
    ``cls`` must have no ``__post_init__``.
    """
    fresh = ("last_seen", "sampled_at", "rows")
    kept = [f.name for f in fields(cls) if f.name not in fresh and f.name not in raw]
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_PENDING": PENDING}
    lines = ["def copy(obj, last_seen, sampled_at, rows):", "    made = _new(_cls)"]
    for k, name in enumerate(kept):
        scope[f"_kept{k}"] = cls.__dict__[name].__set__
        lines.append(f"    _kept{k}(made, obj.{name})")
    for k, slot in enumerate(raw.values()):
        scope[f"_lazy{k}"] = slot.__set__
        lines.append(f"    _lazy{k}(made, _PENDING)")
    for name in fresh:
        scope[f"_set_{name}"] = cls.__dict__[name].__set__
        lines.append(f"    _set_{name}(made, {name})")
    lines.append("    return made")
    exec("\n".join(lines), scope)  # only the class's own field names (identifiers) go in
    copy: Callable[[Any, Any, Any, Any], Any] = scope["copy"]
    return copy
