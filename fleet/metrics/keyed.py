"""A group of ports' raw counters as text: one ``%``, the counters that hold still baked in.

A port sends ~17 raw counters and most never move (error counters of a healthy link stay
0): of a node's ~150 counter series, ~40 move between two scrapes. Formatting a series
costs the ``%`` its label head and its value; a series whose value held still since the
last scrape can instead be part of the group's template, whole. So once a group's counters
have been seen twice, its template bakes in the lines that held still, and a scrape fills
only the moving ones. While every baked value is still the same (compared as a tuple of
ints, in C), the template serves; when one moves, the group is formatted whole again and
the template is rebuilt from the next two scrapes.

Only groups whose values are all ``int`` are baked: equal ints write equal text.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, chain, compress, pairwise
from operator import eq, not_
from typing import Any

from fleet.metrics.families import Keyed, line_head
from fleet.metrics.patterns import ChunkLabels, pattern
from fleet.metrics.tables import Names

_INTS = {int}
BAKE_SHARE = 0.5
"""Bake a group's template only when at least this share of its series held still."""


class _Baked:
    """A group's template with the series that held still written in."""

    __slots__ = ("kept", "kept_values", "moving", "moving_counts", "template")

    def __init__(
        self, template: str, kept: tuple[bool, ...], values: tuple[Any, ...], counts: list[int]
    ) -> None:
        self.template = template
        self.kept = kept  # per shown series: baked in
        self.moving = tuple(map(not_, kept))
        self.kept_values = tuple(compress(values, kept))
        self.moving_counts = counts


class KeyedGroup:
    """The keyed series of one group of a chunk's entities, scrape after scrape.

    Args:
        spec: the keyed spec (the raw port counters).
        base: the kind's base label names.
    """

    __slots__ = ("_baked", "_last", "_layout", "base", "spec")

    def __init__(self, spec: Keyed, base: tuple[str, ...]) -> None:
        self.spec = spec
        self.base = base
        self._layout: tuple[object, ...] | None = None  # (names per entity, present)
        self._last: tuple[Any, ...] | None = None  # values at the last scrape, until baked
        self._baked: _Baked | None = None

    def text(
        self,
        layout: tuple[tuple[Names, ...], tuple[bool, ...] | None],
        values: Sequence[Any],
        full: str,
        counts: Sequence[int],
        labels: ChunkLabels,
        start: int,
    ) -> str:
        """The group's lines: ``values`` are the present values (all plain), ``full`` the
        layout's template of every series and ``counts`` each entity's count of them."""
        if layout != self._layout:
            self._layout, self._last, self._baked = layout, None, None
        ints = set(map(type, values)) == _INTS
        baked = self._baked
        if ints and baked is not None:
            if tuple(compress(values, baked.kept)) == baked.kept_values:
                moving = list(compress(values, baked.moving))
                return baked.template % labels.series_arguments(baked.moving_counts, moving, start)
            self._baked = None
        text = full % labels.series_arguments(counts, values, start)
        last, self._last = self._last, (tuple(values) if ints else None)
        if ints and last is not None and len(last) == len(values):
            kept = tuple(map(eq, values, last))
            if sum(kept) >= BAKE_SHARE * len(kept):
                self._baked = self._bake(layout, kept, self._last, counts, labels, start)
                self._last = None
        return text

    def _bake(
        self,
        layout: tuple[tuple[Names, ...], tuple[bool, ...] | None],
        kept: tuple[bool, ...],
        values: tuple[Any, ...],
        counts: Sequence[int],
        labels: ChunkLabels,
        start: int,
    ) -> _Baked:
        names_of, present = layout
        names = tuple(chain.from_iterable(names_of))
        shown = names if present is None else tuple(compress(names, present))
        heads = labels.heads[start : start + len(counts)]
        family = self.spec.family
        lines = []
        moving_counts = []
        bounds = accumulate(counts, initial=0)
        for head, (a, b) in zip(heads, pairwise(bounds), strict=True):
            moving = 0
            for name, value, still in zip(shown[a:b], values[a:b], kept[a:b], strict=True):
                if still:
                    line = f"{line_head(family, head, (name,))}{value!r}\n"
                    lines.append(line.replace("%", "%%"))
                else:
                    lines.append(pattern(family, self.base, (name,), False))
                    moving += 1
            moving_counts.append(moving)
        return _Baked("".join(lines), kept, values, moving_counts)

