"""Rendering columns (one attribute, one series per entity) fast: the scrape's hot loop.

For a node's GPUs, each column becomes one ``%``-template holding every GPU's cached
line head (``name{labels} %r\\n`` eight times), filled by a single ``%`` operation.
A column with a missing (None) or non-finite value on that node falls back to
formatting value by value, which omits the missing samples.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any

from fleet.metrics.families import (
    Column,
    EntityKind,
    Family,
    Flags,
    Keyed,
    OneHot,
    column_reader,
    format_value,
    label_pairs,
    plain_values,
)


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
    """Columns rendered together, for one entity or for all the GPUs of a node."""

    def __init__(self, columns: tuple[Column, ...], slots: dict[Family, int]) -> None:
        self.columns = columns
        self.read = column_reader(columns)
        self.getters = tuple(attrgetter(c.attr) for c in columns)
        self.slots = tuple(slots[c.family] for c in columns)
        self.scales = tuple(c.scale for c in columns)
        self.flags = tuple(c.flag for c in columns)

    def render(self, entity: Any, heads: tuple[str, ...], parts: list[list[str]]) -> None:
        """Append one line per present value of ``entity`` to its family's part."""
        lines = zip(self.read(entity), heads, self.slots, self.scales, strict=True)
        for value, head, slot, scale in lines:
            text = _text(value, scale)
            if text is not None:
                parts[slot].append(f"{head}{text}\n")

    def render_many(
        self,
        entities: Sequence[Any],
        heads: Sequence[tuple[str, ...]],
        templates: dict[Hashable, Any],
        parts: list[list[str]],
    ) -> None:
        """Append every entity's lines, one ``%`` per column where all values are plain.

        ``templates`` is the caller's cache of filled-in line heads, by column and by
        which entities have a value (a NIC has no expected rate on any tick), and of
        each column's last values and text: many columns hold still (a port's link
        rate, error rates of zero, a GPU's temperature), and equal values are not
        formatted again.
        """
        if not self.columns:
            return
        rows = list(map(self.read, entities))
        columns = zip(zip(*rows, strict=True), self.slots, self.scales, self.flags, strict=True)
        for i, (values, slot, scale, flag) in enumerate(columns):
            last = templates.get(-i - 1)
            if last is not None and last[0] == values:
                parts[slot].append(last[1])
                continue
            raw = values
            present: tuple[bool, ...] | None = None
            if None in values:
                present = tuple(map(is_not, values, repeat(None)))
                values = tuple(compress(values, present))
            if scale is not None:
                values = tuple([v * scale for v in values])
            plain = (
                values.count(True) + values.count(False) == len(values)
                if flag  # %d writes True/False as 1/0; anything else goes value by value
                else plain_values(values)
            )
            if not plain:
                self._render_one_by_one(i, entities, heads, parts[slot])
                continue
            template = templates.get((i, present))
            if template is None:
                kept = heads if present is None else list(compress(heads, present))
                template = "".join(
                    h[i].replace("%", "%%") + ("%d\n" if flag else "%r\n") for h in kept
                )
                templates[(i, present)] = template
            text = template % values
            templates[-i - 1] = (raw, text)
            parts[slot].append(text)

    def _render_one_by_one(
        self, i: int, entities: Sequence[Any], heads: Sequence[tuple[str, ...]], out: list[str]
    ) -> None:
        get, scale = self.getters[i], self.scales[i]
        for entity, head in zip(entities, heads, strict=True):
            text = _text(get(entity), scale)
            if text is not None:
                out.append(f"{head[i]}{text}\n")


Compiled = tuple[tuple[str, ...], tuple[str, ...], list[Any]]
"""Per entity: line heads of its fast columns, of its slow columns, and each other spec's cache."""


class KindPlan:
    """How to render one entity kind fast: columns batched by cadence, the rest per spec."""

    def __init__(self, kind: EntityKind, slots: dict[Family, int]) -> None:
        self.kind = kind
        self.fast = ColumnGroup(kind.columns(slow=False), slots)
        self.slow = ColumnGroup(kind.columns(slow=True), slots)
        self.rendered = kind.rendered
        self.rendered_slots = tuple(slots[s.family] for s in self.rendered)
        # What each such spec's text depends on (an attribute read in C where it is one).
        self.rendered_states: tuple[Callable[[Any], Hashable], ...] = tuple(
            attrgetter(s.attr) if isinstance(s, OneHot | Flags | Keyed) else s.state
            for s in self.rendered
        )
        self.volatile = frozenset(i for i, s in enumerate(self.rendered) if isinstance(s, Keyed))

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
