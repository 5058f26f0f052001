"""Rendering columns (one attribute, one series per entity) fast: the scrape's hot loop.

For a chunk's GPUs, each column is one join of the GPUs' label heads, the column's
constant pieces and its values' text (:meth:`ColumnGroup.column_text`). A column with
a non-finite or odd value in the chunk falls back to formatting value by value;
missing (None) values are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from itertools import compress, repeat
from math import copysign
from operator import is_not
from typing import Any

from exporter.families import (
    Column,
    EntityKind,
    Family,
    Flags,
    Keyed,
    OneHot,
    column_reader,
    extra_text,
    format_value,
    label_pairs,
    plain_values,
)
from exporter.patterns import ChunkLabels, Templates, pattern
from exporter.tables import KindTable, keyed_attributes, read_attributes

_INT, _FLOAT = {int}, {float}


def _text(value: Any, scale: float | None) -> str | None:
    """One value as the text format writes it, or None to omit the sample."""
    if value is None:
        return None
    if scale is not None:
        value = value * scale
    cls = value.__class__
    if cls is float:
        if value != value:  # NaN: a reading that failed, omitted like None
            return None
        text = repr(value)
        if text[-1] == "f":
            return "+Inf" if value > 0 else "-Inf"
        return text
    if cls is int:
        return repr(value)
    return format_value(value)  # bool, or a numeric type from elsewhere


class ColumnGroup:
    """Columns rendered together, for one entity or for all the entities of a chunk."""

    def __init__(
        self, columns: tuple[Column, ...], slots: dict[Family, int], base_labels: tuple[str, ...]
    ) -> None:
        self.columns = columns
        self.attrs = tuple(c.attr for c in columns)
        self.read = column_reader(columns)
        self.slots = tuple(slots[c.family] for c in columns)
        self.scales = tuple(c.scale for c in columns)
        self.flags = tuple(c.flag for c in columns)
        self.patterns = tuple(pattern(c.family, base_labels, c.extra, c.flag) for c in columns)
        # A line is before + label head + middle + value + end (see column_text).
        self.pieces = tuple(
            (f"{c.family.name}{{", f"{extra_text(c.family.labels, c.extra)}}} ", "\n")
            for c in columns
        )
        self.formats: tuple[Callable[[Any], str], ...] = tuple(
            "%d".__mod__ if c.flag else repr for c in columns
        )
        self.joins = bool(base_labels)  # a kind without base labels has no head to join
        # The pattern without its value: a line head once label values are filled in.
        self.head_formats = tuple(p[:-3] for p in self.patterns)

    def render(self, entity: Any, heads: tuple[str, ...], parts: list[list[str]]) -> None:
        """Append one line per present value of ``entity`` to its family's part."""
        lines = zip(self.read(entity), heads, self.slots, self.scales, strict=True)
        for value, head, slot, scale in lines:
            text = _text(value, scale)
            if text is not None:
                parts[slot].append(f"{head}{text}\n")

    def column_text(
        self, i: int, column: tuple[Any, ...], labels: ChunkLabels, templates: Templates
    ) -> str:
        """Column ``i``'s lines for every entity (its values ``column``), by one join
        where all values are plain; entities whose value is None are left out.

        The entities' label heads (``labels``), the column's constant pieces and its
        values' text (``repr``, as ``%r`` writes them) are laid out in one list and joined:
        a copy of each piece. A ``%`` over the pattern repeated (``templates``, kept for a
        kind without base labels) parsed two conversions per line, ~1.3x slower.
        """
        values = column
        present: tuple[bool, ...] | None = None
        if None in values:
            present = tuple(map(is_not, values, repeat(None)))
            values = tuple(compress(values, present))
        scale = self.scales[i]
        if scale is not None:
            values = tuple([v * scale for v in values])
        plain = (
            values.count(True) + values.count(False) == len(values)
            if self.flags[i]  # %d writes True/False as 1/0; anything else goes value by value
            else plain_values(values)
        )
        if not plain:
            return self._render_one_by_one(i, column, labels)
        if not values:
            return ""
        if not self.joins:
            template = templates.repeated(self.patterns[i], len(values))
            return template % labels.arguments(present, values)
        before, middle, end = self.pieces[i]
        count = len(values)
        if values.count(values[0]) == count and self._one_text(i, values):
            # One value for every entity (a fleet's zero error counts, its GPUs' memory
            # and power limit): written once, the heads joined around it.
            text = self.formats[i](values[0])
            between = f"{middle}{text}{end}{before}"
            return f"{before}{between.join(labels.chosen(present))}{middle}{text}{end}"
        slots: list[Any] = [None] * (4 * count + 1)
        slots[0] = before
        slots[1::4] = labels.chosen(present)
        slots[2::4] = (middle,) * count
        slots[3::4] = map(self.formats[i], values)
        slots[4::4] = (end + before,) * count
        slots[-1] = end
        return "".join(slots)

    def _one_text(self, i: int, values: tuple[Any, ...]) -> bool:
        """Whether equal plain ``values`` are written alike: ``%d`` writes 1 and True
        alike, ``repr`` does not write 0 and 0.0, or 0.0 and -0.0, alike."""
        if self.flags[i]:
            return True
        types = set(map(type, values))
        if types == _INT:
            return True
        if types != _FLOAT:
            return False
        # Equal floats have one repr, except zeros of either sign: all +0.0 or all -0.0.
        return values[0] != 0 or abs(sum(map(copysign, repeat(1.0), values))) == len(values)

    def _render_one_by_one(self, i: int, column: tuple[Any, ...], labels: ChunkLabels) -> str:
        scale, head = self.scales[i], self.head_formats[i]
        out = []
        for value, label_head in zip(column, labels.heads, strict=True):
            text = _text(value, scale)
            if text is not None:
                out.append(f"{head % label_head}{text}\n")
        return "".join(out)


def _indices_by_slot(slots: tuple[int, ...]) -> dict[int, tuple[int, ...]]:
    """``slots[i]`` inverted: each slot's indices, in order."""
    out: dict[int, list[int]] = {}
    for i, slot in enumerate(slots):
        out.setdefault(slot, []).append(i)
    return {slot: tuple(indices) for slot, indices in out.items()}


Compiled = tuple[tuple[str, ...], tuple[str, ...], list[Any]]
"""Per entity: line heads of its fast columns, of its slow columns, and each other spec's cache."""


class KindPlan:
    """How to render one entity kind fast: columns batched by cadence, the rest per spec."""

    def __init__(
        self, kind: EntityKind, slots: dict[Family, int], keeps_entities: bool = False
    ) -> None:
        self.kind = kind
        # Whether blocks keep the last entities to skip unchanged ones (see EntityBlock):
        # for GPUs and ports, not for nodes (a node holds its whole tick's rows).
        self.keeps_entities = keeps_entities
        self.fast = ColumnGroup(kind.columns(slow=False), slots, kind.base_labels)
        self.slow = ColumnGroup(kind.columns(slow=True), slots, kind.base_labels)
        self.rendered = kind.rendered
        self.rendered_slots = tuple(slots[s.family] for s in self.rendered)
        self.attrs = read_attributes(kind)
        self.keyed = keyed_attributes(kind)
        # What each such spec's text depends on: an attribute's values in the chunk's
        # table, or a function of each entity.
        self.rendered_states: tuple[str | Callable[[Any], Hashable], ...] = tuple(
            s.attr if isinstance(s, OneHot | Flags | Keyed) else s.state for s in self.rendered
        )
        # Per family slot, what of this kind writes there (a scrape streams family by family).
        self.fast_at = _indices_by_slot(self.fast.slots)
        self.slow_at = _indices_by_slot(self.slow.slots)
        self.specs_at = _indices_by_slot(self.rendered_slots)
        self.slots = frozenset((*self.fast.slots, *self.slow.slots, *self.rendered_slots))

    def table(self) -> KindTable:
        """An empty table of the attributes this kind's specs read."""
        return KindTable(self.attrs, self.keyed)

    def compile(self, base: tuple[str, ...]) -> Compiled:
        """The cached text of one entity whose base label values are ``base``."""
        head = label_pairs(self.kind.base_labels, base)
        return (
            tuple(c.compile(head) for c in self.fast.columns),
            tuple(c.compile(head) for c in self.slow.columns),
            [s.compile(head) for s in self.rendered],
        )

    def render(self, entity: Any, compiled: Compiled, parts: list[list[str]]) -> None:
        """Append ``entity``'s lines to ``parts``."""
        fast_heads, slow_heads, _ = compiled
        self.fast.render(entity, fast_heads, parts)
        self.slow.render(entity, slow_heads, parts)
        self.render_specs(entity, compiled, parts)

    def render_specs(self, entity: Any, compiled: Compiled, parts: list[list[str]]) -> None:
        """Append the lines of the specs that are not columns (one-hots, flags, labelled)."""
        for spec, cache, slot in zip(self.rendered, compiled[2], self.rendered_slots, strict=True):
            spec.render(entity, cache, parts[slot])
