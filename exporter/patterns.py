"""Series text as shared patterns and per-entity label values: little memory per series.

A family's line for one entity is a pattern, ``name{%s,extra="x"} %r\\n``, the same
for every GPU of the fleet, where ``%s`` takes the entity's *label head*
(``node="a",gpu="0",...``, escaped, built once per entity and shared by every family).
A chunk's column is that pattern repeated once per entity with a value, filled by one
``%`` with the entities' label heads and the column's values interleaved: two
arguments per series, whatever the number of base labels. The repeated pattern
depends only on how many entities have a value, so one string serves every chunk of
the same size; what a chunk keeps is a list of references to label heads it shares
with every other family. Caching each series' finished head instead (name and labels, ~100 bytes for
each of ~550 series per node) held about 240 MiB at 1,000 nodes; this holds a few.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import compress
from typing import Any

from exporter.families import Family, extra_text, label_pairs

TEMPLATES_KEPT = 512
"""Repeated patterns kept (per column and count; per counter layout): a fleet has a few."""


def pattern(
    family: Family, base_labels: tuple[str, ...], extra: tuple[str, ...], flag: bool
) -> str:
    """``name{%s,extra="x"} %r\\n`` (``%d`` for a 0/1 flag); literal ``%`` doubled.

    The ``%s`` takes the entity's label head (its base labels, see :class:`ChunkLabels`);
    a kind without base labels has none.
    """
    extras = extra_text(family.labels, extra).replace("%", "%%")
    labels = ("%s" + extras) if base_labels else extras[1:]
    value = "%d\n" if flag else "%r\n"
    return f"{family.name}{{{labels}}} {value}" if labels else f"{family.name} {value}"


class Templates:
    """Repeated patterns by key, shared by every chunk; bounded (keys partly come from nodes)."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, str] = {}

    def repeated(self, line: str, count: int) -> str:
        """``line`` repeated ``count`` times."""
        return self.get((line, count), lambda: line * count)

    def get(self, key: Hashable, build: Callable[[], str]) -> str:
        """The template under ``key``, made by ``build()`` when missing."""
        template = self._kept.get(key)
        if template is None:
            if len(self._kept) >= TEMPLATES_KEPT:
                self._kept.clear()
            template = self._kept[key] = build()
        return template


class ChunkLabels:
    """The label heads of a chunk's entities (``node="a",gpu="0",...``), as ``%`` arguments.

    One string per entity, built once per block and shared by every family of the kind:
    a series then costs the ``%`` two arguments (its head, its value), not one per label.

    Args:
        keys: each entity's base label values (any objects; ``str`` of each is used).
        names: the base label names, in the keys' order.
    """

    def __init__(self, keys: Sequence[tuple[Any, ...]], names: tuple[str, ...]) -> None:
        self.heads = tuple(label_pairs(names, tuple(map(str, key))) for key in keys)
        # Tuples, not lists: a tuple of strings leaves the collector's view at its first
        # collection, where a kept list of ~4,000 references was walked by every full one
        # (~600,000 at 1,000 nodes, most of a scheduled collection's pause).
        self._flat: dict[Hashable, tuple[Any, ...]] = {}

    def chosen(self, present: tuple[bool, ...] | None) -> tuple[str, ...]:
        """The label heads of the entities ``present`` marks (all when None)."""
        if present is None:
            return self.heads
        key = ("chosen", present)
        heads = self._flat.get(key)
        if heads is None:
            if len(self._flat) > 8:  # presence patterns seen: a few per chunk at most
                self._flat.clear()
            heads = self._flat[key] = tuple(compress(self.heads, present))
        return heads

    def arguments(self, present: tuple[bool, ...] | None, values: Sequence[Any]) -> tuple[Any, ...]:
        """Label values and ``values`` interleaved, for the entities ``present`` marks."""
        flat = self._flat.get(present)
        if flat is None:
            if len(self._flat) > 8:  # presence patterns seen: a few per chunk at most
                self._flat.clear()
            chosen = self.heads if present is None else compress(self.heads, present)
            flat = self._flat[present] = tuple(x for head in chosen for x in (head, None))
        args = list(flat)
        args[1::2] = values
        return tuple(args)

    def series_arguments(
        self, counts: Sequence[int], values: Sequence[Any], start: int = 0
    ) -> tuple[Any, ...]:
        """As :meth:`arguments`, for the entities from ``start`` with ``counts[i]`` series
        each (keyed series)."""
        key = ("series", start, tuple(counts))
        flat = self._flat.get(key)
        if flat is None:
            if len(self._flat) > 16:  # a few groups of a chunk, a few layouts each
                self._flat.clear()
            heads = self.heads[start : start + len(counts)]
            flat = self._flat[key] = tuple(
                x for head, n in zip(heads, counts, strict=True) for _ in range(n)
                for x in (head, None)
            )  # fmt: skip
        args = list(flat)
        args[1::2] = values
        return tuple(args)
