"""A group of ports' raw counters as text: one ``%``, the counters that hold still baked in.

A port sends ~17 raw counters and most never move (error counters of a healthy link stay
0): of a node's ~150 counter series, ~40 move between two scrapes. Formatting a series
costs the ``%`` its label head and its value; a series whose value held still since the
last scrape can instead be part of the group's template, whole. So once a group's counters
have been seen twice, its text is kept with the lines that held still written in, and
the label heads of the others, and a scrape writes only the moving values into it (~4 MiB
of heads at 1,000 nodes, besides the ~10 MiB of lines that held still). While every
baked value is still the same (compared as a tuple of ints, in C), the kept text serves;
when one moves, the group is formatted whole again and kept anew from the next two
scrapes.

Only groups whose values are all ``int`` are baked: equal ints write equal text.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, chain, compress, pairwise
from operator import eq, not_
from typing import Any

from fleet.metrics.families import Keyed, line_head
from fleet.metrics.patterns import ChunkLabels
from fleet.metrics.tables import Names

_INTS = {int}
_INTS_OR_NONE = {int, type(None)}
BAKE_SHARE = 0.5
"""Bake a group's template only when at least this share of its series held still."""


class _Baked:
    """A group's text with the series that held still written in, as the literal text
    between the moving values: ``[text, None, text, None, ..., text]``.

    Joined with the moving values' ``repr`` in their places (one ``str.join``, a copy):
    a ``%`` over the same text read it character by character looking for ``%``, ~3x
    slower for ~180 literal characters per value.
    """

    __slots__ = ("kept", "kept_values", "moving", "names_of", "slots")

    def __init__(
        self,
        literals: list[str],
        names_of: tuple[Names, ...],
        kept: tuple[bool, ...],
        raw: tuple[Any, ...],
    ) -> None:
        slots: list[str | None] = [None] * (2 * len(literals) - 1)
        slots[::2] = literals
        self.slots = tuple(slots)  # kept as a tuple: out of the collector's view
        self.names_of = names_of
        # Per value (None where missing included): baked in, or not. As bytes: a mask of
        # ~2,800 values is ~2.8 KB, not ~22 KB of pointers (compress takes any iterable).
        self.kept = bytes(kept)
        self.moving = bytes(map(not_, kept))
        self.kept_values = tuple(compress(raw, kept))


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

    def baked_text(self, names_of: tuple[Names, ...], raw: Sequence[Any]) -> str | None:
        """The group's lines from the baked template, when it holds for ``raw`` (every
        entity's values, None where missing) and ``names_of``; else None."""
        baked = self._baked
        if baked is None or names_of != baked.names_of:
            return None
        still = tuple(compress(raw, baked.kept))
        if still != baked.kept_values or not set(map(type, still)) <= _INTS_OR_NONE:
            return None  # equal is not enough: 0 == 0.0, and 0.0 writes other text
        moving = tuple(compress(raw, baked.moving))
        if set(map(type, moving)) != _INTS:
            return None
        slots = list(baked.slots)
        slots[1::2] = map(repr, moving)  # an int's repr is its text in the format
        return "".join(slots)  # type: ignore[arg-type]

    def text(
        self,
        layout: tuple[tuple[Names, ...], bytes | None],
        values: Sequence[Any],
        raw: Sequence[Any],
        full: str,
        counts: Sequence[int],
        labels: ChunkLabels,
        start: int,
    ) -> str:
        """The group's lines through ``full``, the layout's template of every series:
        ``values`` are the present values (all plain) of ``raw``, ``counts`` each entity's
        count of them. Bakes the template when most values held still since the last call."""
        self._baked = None
        if layout != self._layout:
            self._layout, self._last = layout, None
        ints = set(map(type, values)) == _INTS
        text = full % labels.series_arguments(counts, values, start)
        last, self._last = self._last, (tuple(values) if ints else None)
        if ints and last is not None and len(last) == len(values):
            kept = tuple(map(eq, values, last))
            if sum(kept) >= BAKE_SHARE * len(kept):
                literals = self._literals(layout, kept, values, counts, labels, start)
                self._baked = _Baked(literals, layout[0], _on_raw(kept, layout[1]), tuple(raw))
                self._last = None
        return text

    def forget(self) -> None:
        """Drop what was kept (the group is written sample by sample this time)."""
        self._baked = self._last = None

    def _literals(
        self,
        layout: tuple[tuple[Names, ...], bytes | None],
        kept: tuple[bool, ...],
        values: Sequence[Any],
        counts: Sequence[int],
        labels: ChunkLabels,
        start: int,
    ) -> list[str]:
        """The text between the values that moved (the lines that held still whole)."""
        names_of, present = layout
        names = tuple(chain.from_iterable(names_of))
        shown = names if present is None else tuple(compress(names, present))
        heads = labels.heads[start : start + len(counts)]
        family = self.spec.family
        literals: list[str] = []
        lines: list[str] = []
        bounds = accumulate(counts, initial=0)
        for head, (a, b) in zip(heads, pairwise(bounds), strict=True):
            for name, value, still in zip(shown[a:b], values[a:b], kept[a:b], strict=True):
                text = line_head(family, head, (name,))
                if still:
                    lines.append(f"{text}{value!r}\n")
                else:
                    lines.append(text)
                    literals.append("".join(lines))
                    lines = ["\n"]
        literals.append("".join(lines))
        return literals


def _on_raw(kept: tuple[bool, ...], present: bytes | None) -> tuple[bool, ...]:
    """``kept`` (over the present values) over every value: a missing one is kept (None)."""
    if present is None:
        return kept
    marks = iter(kept)
    return tuple(next(marks) if here else True for here in present)
