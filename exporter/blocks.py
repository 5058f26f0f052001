"""The entities of one kind in a chunk of nodes as exposition text, with cached heads.

The text of a chunk's GPUs (or ports) is built column by column: one join lays a
column's values beside the label heads of every GPU of every node in the chunk, so the
interpreter's per-operation cost is paid per ~500 series, not per series. Only the
one-hot, flag and info lines are kept between scrapes while their states hold still:
of the texts the renderer once kept, they alone save more CPU per MiB held than the
resident-set target leaves room for (bench/results/history.md, "Whole process, run 10").
Column and counter text is written anew each scrape.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import accumulate, chain, compress, pairwise, repeat
from operator import is_, is_not
from typing import Any

from exporter.columns import KindPlan
from exporter.families import Keyed, format_value, line_head, plain_values
from exporter.patterns import ChunkLabels, Templates, pattern
from exporter.spec_chunks import render_chunk
from exporter.tables import EntityKey, KindTable, Names

KEYED_GROUP = 128
"""Entities whose keyed series (a port's ~16 raw counters) are written together: ~2,000
series, about a millisecond; a chunk's ~600 ports at once held the loop ~5-10 ms."""


_KeyedLayout = tuple[tuple[Names, ...], bytes | None, str, tuple[int, ...]]
"""A group's counter names per entity, which values are present (None: all), the
template, and each entity's count of series."""


class EntityBlock:
    """Entities of one kind with fixed labels: their label heads and the texts reused.

    Args:
        plan: the kind's rendering plan.
        keys: the entities' keys, in order.
        templates: repeated patterns, shared by every block of the renderer.
    """

    keys: tuple[EntityKey, ...]

    def __init__(self, plan: KindPlan, keys: tuple[EntityKey, ...], templates: Templates) -> None:
        self.plan = plan
        self.keys = keys
        self.labels = ChunkLabels(keys, plan.kind.base_labels)
        self.templates = templates
        # Per non-column spec: the entities' states it was last rendered for, and its text.
        self.spec_texts: list[tuple[tuple[Any, ...], bytes] | None] = [None] * len(plan.rendered)
        # The entities last rendered, where the plan keeps them: frozen objects (a GPU's or
        # port's brief stays the same object while unchanged), so the same ones again
        # render the same text for every spec that computes its state from the entity.
        self.last_entities: tuple[Any, ...] = ()
        self.unchanged = False  # this scrape's entities are last_entities (set by begin)
        # Per keyed spec and group of entities: its layout at the last scrape (it holds
        # still for a session, so the template is not looked up by a 3,000-name key).
        self.keyed_layouts: dict[tuple[int, int], _KeyedLayout] = {}

    def begin(self, table: KindTable) -> None:
        """Take this scrape's ``table``: call once per scrape, before :meth:`slot_texts`."""
        self.unchanged = False
        if self.plan.keeps_entities:
            entities = tuple(table.entities)
            before = self.last_entities
            self.unchanged = len(before) == len(entities) and all(map(is_, before, entities))
            self.last_entities = entities

    def slot_texts(self, table: KindTable, slot: int) -> Iterator[str | bytes]:
        """The lines of family ``slot`` in pieces of well under a millisecond's work each:
        fast columns, slow columns, then the other specs.

        The order within a family is the same whether the chunk is rendered family by
        family (a streamed scrape) or whole (:meth:`render`).
        """
        plan = self.plan
        for group, at in ((plan.fast, plan.fast_at), (plan.slow, plan.slow_at)):
            for i in at.get(slot, ()):
                column = tuple(table.values[group.attrs[i]])
                yield group.column_text(i, column, self.labels, self.templates)
        for i in plan.specs_at.get(slot, ()):
            yield from self._spec_texts(i, table)

    def _spec_texts(self, i: int, table: KindTable) -> Iterator[str | bytes]:
        spec, state_of = self.plan.rendered[i], self.plan.rendered_states[i]
        if isinstance(spec, Keyed):  # moves every tick: comparing would only cost
            yield from self._keyed_texts(i, spec, table)
            return
        if isinstance(state_of, str):
            states = tuple(table.values[state_of])
        else:
            kept = self.spec_texts[i]
            if self.unchanged and kept is not None:  # same frozen entities: same states
                yield kept[1]
                return
            states = tuple(map(state_of, table.entities))
        last = self.spec_texts[i]
        if last is not None and last[0] == states:
            yield last[1]
            return
        lines: list[str] = []
        render_chunk(spec, states, self.labels.heads, lines)
        text = "".join(lines).encode()
        self.spec_texts[i] = (states, text)
        yield text

    def _keyed_texts(self, i: int, spec: Keyed, table: KindTable) -> Iterator[str]:
        """The keyed series of the chunk, :data:`KEYED_GROUP` entities per piece."""
        names = table.values[spec.attr]
        flat = table.flat[spec.attr]
        bounds = list(accumulate(map(len, names), initial=0))
        for start in range(0, len(names), KEYED_GROUP):
            end = min(start + KEYED_GROUP, len(names))
            out: list[str] = []
            group = tuple(names[start:end])
            self._render_keyed(i, spec, group, flat[bounds[start] : bounds[end]], start, out)
            yield from out

    def _render_keyed(
        self,
        i: int,
        spec: Keyed,
        names_of: tuple[Names, ...],
        values: list[Any],
        start: int,
        out: list[str],
    ) -> None:
        """The keyed series of the entities from ``start`` (their names ``names_of``, their
        values one after the other), through one ``%`` over a template shared by layout.

        The layout (each entity's names, and which values are missing: a counter the
        port lacks is None on every tick) holds still for a session, and is the same
        on every node of a fleet of one kind: the template is shared by key.
        """
        if not values:
            return
        present: bytes | None = None
        if None in values:
            present = bytes(map(is_not, values, repeat(None)))  # 1 byte per value, kept
            values = list(compress(values, present))
        if not plain_values(values):
            self._render_keyed_one_by_one(i, spec, names_of, values, present, start, out)
            return
        layout = self.keyed_layouts.get((i, start))
        if layout is None or layout[0] != names_of or layout[1] != present:
            layout = self._keyed_layout(spec, names_of, present)
            self.keyed_layouts[(i, start)] = layout
        out.append(layout[2] % self.labels.series_arguments(layout[3], values, start))

    def _keyed_layout(
        self, spec: Keyed, names_of: tuple[Names, ...], present: bytes | None
    ) -> _KeyedLayout:
        """The template and per-entity series counts of one layout of a group's counters."""
        names = tuple(chain.from_iterable(names_of))
        lengths = tuple(map(len, names_of))
        counts = lengths
        shown: Iterable[str] = names
        if present is not None:  # per entity: how many of its series have a value
            bounds = list(accumulate(lengths, initial=0))
            counts = tuple(sum(present[a:b]) for a, b in pairwise(bounds))
            shown = compress(names, present)
        base = self.plan.kind.base_labels
        template = self.templates.get(
            (spec.family.name, names, present),
            lambda: "".join(pattern(spec.family, base, (name,), False) for name in shown),
        )
        return names_of, present, template, counts

    def _render_keyed_one_by_one(
        self,
        i: int,
        spec: Keyed,
        names_of: tuple[Names, ...],
        values: list[Any],
        present: bytes | None,
        start: int,
        out: list[str],
    ) -> None:
        """Sample by sample (a non-finite or odd value among them): ``values`` are the
        present ones, ``present`` marks them among all of the entities' series."""
        shown = iter(values)
        marks = repeat(True) if present is None else iter(present)
        heads = self.labels.heads[start : start + len(names_of)]
        for names, head in zip(names_of, heads, strict=True):
            for name in names:
                if not next(marks):
                    continue
                text = format_value(next(shown))
                if text is not None:
                    out.append(f"{line_head(spec.family, head, (name,))}{text}\n")
