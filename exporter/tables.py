"""A chunk's entities of one kind as lists of values, one list per attribute a spec reads.

Every series spec either reads one attribute of its entity (a column, a one-hot state,
a bitmask, the raw counters) or calls a function of it (a derived figure, info labels).
A :class:`KindTable` holds, for the entities of a chunk, one list per such attribute,
the entities those functions are called with, and each entity's label key. It is filled
from snapshot objects here, or from a tick's rows without building any GPU or port
object (:mod:`exporter.tick_rows`); the renderer reads only the table.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from operator import attrgetter
from typing import Any

from exporter.families import Column, EntityKind, Flags, Keyed, OneHot

EntityKey = tuple[Hashable, ...]
"""An entity's label values, node first: (node, index, uuid, model) for a GPU."""


KeyedValues = tuple[tuple[str, ...], tuple[Any, ...]]
"""An entity's keyed series (its raw counters) as names and values, in the same order."""

Names = tuple[str, ...]


def read_attributes(kind: EntityKind) -> tuple[str, ...]:
    """The attributes the specs of ``kind`` read (columns, one-hots, bitmasks, counters)."""
    attrs = (s.attr for s in kind.specs if isinstance(s, Column | OneHot | Flags | Keyed))
    return tuple(dict.fromkeys(attrs))


def keyed_attributes(kind: EntityKind) -> frozenset[str]:
    """The attributes of ``kind`` that hold (name, value) pairs (held as names, values)."""
    return frozenset(s.attr for s in kind.specs if isinstance(s, Keyed))


def split_pairs(pairs: tuple[tuple[str, Any], ...]) -> KeyedValues:
    """``((a, 1), (b, 2))`` as ``((a, b), (1, 2))``."""
    return (tuple(name for name, _ in pairs), tuple(value for _, value in pairs))


class KindTable:
    """The entities of one kind in a chunk: keys, values by attribute, and the entities.

    Args:
        attrs: the attributes to hold (:func:`read_attributes` of the kind).
        keyed: those of ``attrs`` that hold (name, value) pairs on an object; the table
            holds each entity's names in ``values`` and all their values, entity after
            entity, in ``flat`` (a scrape formats a group of ports' counters by one ``%``,
            so per-port tuples would only be built to be taken apart again).

    Attributes:
        keys: each entity's label values, in order.
        values: per attribute, each entity's value (a keyed one: its names), in order.
        flat: per keyed attribute, every entity's values one after the other.
        entities: what the specs that compute a value call their function with: the
            snapshot object, or an object with the attributes those functions read
            (a GPU's or port's brief).
    """

    __slots__ = ("entities", "flat", "keyed", "keys", "values")

    def __init__(self, attrs: tuple[str, ...], keyed: frozenset[str] = frozenset()) -> None:
        self.keys: list[EntityKey] = []
        self.values: dict[str, list[Any]] = {attr: [] for attr in attrs}
        self.flat: dict[str, list[Any]] = {attr: [] for attr in attrs if attr in keyed}
        self.entities: list[Any] = []
        self.keyed = keyed

    def add_keyed(self, attr: str, names: Names, values: tuple[Any, ...]) -> None:
        """Add one entity's keyed series ``attr`` (names and values in the same order)."""
        self.values[attr].append(names)
        self.flat[attr].extend(values)

    def add_objects(self, keys: Iterable[EntityKey], objects: tuple[Any, ...]) -> None:
        """Add snapshot objects (GpuSnapshot, PortSnapshot, NodeSnapshot) and their keys."""
        self.keys.extend(keys)
        self.entities.extend(objects)
        for attr, values in self.values.items():
            if attr in self.keyed:
                for names, keyed in map(split_pairs, map(attrgetter(attr), objects)):
                    self.add_keyed(attr, names, keyed)
            else:
                values.extend(map(attrgetter(attr), objects))
