"""The building blocks of the metric catalog, shared by both exposition paths.

A :class:`Family` is one metric family (name, help, type, label names). A *series
spec* says how one entity (a GPU, a port, a node) contributes samples to a family.
Each spec answers twice, from the same definition, so the two paths cannot drift:

* ``series(entity)`` yields ``(extra label values, value)`` pairs: the plain path
  that :class:`exporter.collector.FleetCollector` feeds to prometheus_client;
* ``compile(head)`` returns a small cache object for one entity, and ``render``
  uses it to append finished text lines: the fast path of
  :mod:`exporter.text` (columns are rendered in groups by
  :mod:`exporter.columns`).

A missing value (``None``) or a NaN omits the sample; booleans are 1 and 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import Any, Literal

Number = float | int | bool
Series = tuple[tuple[str, ...], float]

_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n"})


def escape_label_value(value: str) -> str:
    """Escape a label value for the text format (backslash, double quote, newline)."""
    return value.translate(_ESCAPES)


def escape_help(text: str) -> str:
    """Escape a HELP text (backslash and newline only, as the text format 0.0.4 says)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def label_pairs(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    """``a="x",b="y"`` with the values escaped."""
    return ",".join(f'{n}="{escape_label_value(v)}"' for n, v in zip(names, values, strict=True))


def format_value(value: Number) -> str | None:
    """The text form of a sample value, or None when the sample is to be omitted."""
    if value.__class__ is bool:
        return "1" if value else "0"
    if value.__class__ is int:
        return str(value)
    number = float(value)
    if math.isnan(number):
        return None
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return repr(number)


def plain_value(value: Number | None) -> float | None:
    """The float a sample carries on the prometheus_client path, or None to omit it."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


@dataclass(frozen=True, slots=True)
class Family:
    """One metric family as exposed: ``name`` includes ``_total`` for counters."""

    name: str
    help: str
    type: Literal["gauge", "counter"]
    labels: tuple[str, ...]

    def header(self) -> str:
        """The ``# HELP`` and ``# TYPE`` lines."""
        return f"# HELP {self.name} {escape_help(self.help)}\n# TYPE {self.name} {self.type}\n"


def gauge(name: str, help_: str, labels: tuple[str, ...]) -> Family:
    """A gauge family."""
    return Family(name, help_, "gauge", labels)


def counter(name: str, help_: str, labels: tuple[str, ...]) -> Family:
    """A counter family; ``name`` ends in ``_total``."""
    return Family(name, help_, "counter", labels)


@lru_cache(maxsize=16384)
def extra_text(names: tuple[str, ...], extra: tuple[str, ...]) -> str:
    """``,a="x"`` for the extra labels: the same few (counter names, states) on every node.

    Bounded: extras partly come from nodes (state strings), so a hostile node must not
    grow the cache without limit.
    """
    return "," + label_pairs(names[len(names) - len(extra) :], extra) if extra else ""


def line_head(family: Family, head: str, extra: tuple[str, ...]) -> str:
    """``name{base labels,extra labels} `` for one series: everything but the value."""
    extras = extra_text(family.labels, extra)
    if head:
        return f"{family.name}{{{head}{extras}}} "
    return f"{family.name}{{{extras[1:]}}} " if extras else f"{family.name} "


_INTS = {int}
_NUMBERS = {int, float}


def plain_values(values: Sequence[Any]) -> bool:
    """Whether ``%r`` writes every value as the text format does (no None, bool, NaN, inf)."""
    types = set(map(type, values))
    if types == _INTS or not values:
        return True
    if not types <= _NUMBERS:
        return False
    total = sum(values)
    return bool(total - total == 0)  # NaN and infinities make the sum non-finite


def line_template(heads: Sequence[str]) -> str:
    """One ``%``-template writing a value after each line head (``%`` in labels escaped)."""
    return "".join(h.replace("%", "%%") + "%r\n" for h in heads)


@dataclass(frozen=True, slots=True)
class Column:
    """One series per entity, read from attribute ``attr`` (times ``scale``).

    Columns have no ``render``: :mod:`exporter.columns` renders them in groups
    (one ``%`` per family for all the GPUs of a node), the hot loop of a large scrape.
    """

    family: Family
    attr: str
    extra: tuple[str, ...] = ()
    scale: float | None = None
    slow: bool = False  # read on the agent's slow cadence: the renderer reuses unchanged text
    flag: bool = False  # values are booleans, written 1 and 0

    def series(self, entity: Any) -> Iterator[Series]:
        value = plain_value(getattr(entity, self.attr))
        if value is not None:
            yield self.extra, value * self.scale if self.scale is not None else value

    def compile(self, head: str) -> str:
        return line_head(self.family, head, self.extra)


@dataclass(frozen=True, slots=True)
class Derived:
    """One series per entity computed by ``get`` (for the few per-node figures)."""

    family: Family
    get: Callable[[Any], Number | None]

    def series(self, entity: Any) -> Iterator[Series]:
        value = plain_value(self.get(entity))
        if value is not None:
            yield (), value

    def compile(self, head: str) -> str:
        return line_head(self.family, head, ())

    def state(self, entity: Any) -> Hashable:
        """What the text depends on: equal states render equal text."""
        return self.get(entity)

    def render(self, entity: Any, cache: str, out: list[str]) -> None:
        self.render_state(self.get(entity), cache, out)

    def render_state(self, value: Any, cache: str, out: list[str]) -> None:
        """Append the line for ``value`` (what :meth:`state` returned)."""
        text = None if value is None else format_value(value)
        if text is not None:
            out.append(f"{cache}{text}\n")


@dataclass(frozen=True, slots=True)
class OneHot:
    """A state as one series per possible state: 1 for the current one, 0 for the rest.

    The last label of the family carries the state. When the attribute is None the
    entity has no such state (a GPU never probed) and emits nothing.
    """

    family: Family
    attr: str
    states: tuple[str, ...]

    def series(self, entity: Any) -> Iterator[Series]:
        current = getattr(entity, self.attr)
        if current is None:
            return
        for state in self.states:
            yield (state,), 1.0 if state == current else 0.0

    def compile(self, head: str) -> dict[str | None, str]:
        # The whole block depends only on the current state: cache it per state seen.
        return {None: head}

    def state(self, entity: Any) -> Hashable:
        """What the text depends on: the current state."""
        return getattr(entity, self.attr)

    def render(self, entity: Any, cache: dict[str | None, str], out: list[str]) -> None:
        self.render_state(getattr(entity, self.attr), cache, out)

    def render_state(self, current: Any, cache: dict[str | None, str], out: list[str]) -> None:
        """Append the block for state ``current`` (nothing when it is None)."""
        if current is None:
            return
        block = cache.get(current)
        if block is None:
            head = cache[None]
            block = "".join(
                f"{line_head(self.family, head, (s,))}{1 if s == current else 0}\n"
                for s in self.states
            )
            cache[current] = block
        out.append(block)


@dataclass(frozen=True, slots=True)
class Flags:
    """One series valued 1 per set bit of a bitmask that has a name (the rest are absent)."""

    family: Family
    attr: str
    bits: tuple[tuple[int, str], ...]

    def active(self, mask: int) -> Iterator[str]:
        return (name for bit, name in self.bits if mask & bit)

    def series(self, entity: Any) -> Iterator[Series]:
        mask = getattr(entity, self.attr)
        if mask is not None:
            for name in self.active(mask):
                yield (name,), 1.0

    def compile(self, head: str) -> dict[int | None, str]:
        return {None: head}

    def state(self, entity: Any) -> Hashable:
        """What the text depends on: the mask."""
        return getattr(entity, self.attr)

    def render(self, entity: Any, cache: dict[int | None, str], out: list[str]) -> None:
        self.render_state(getattr(entity, self.attr), cache, out)

    def render_state(self, mask: Any, cache: dict[int | None, str], out: list[str]) -> None:
        """Append one line per named bit set in ``mask`` (nothing when it is None)."""
        if mask is None:
            return
        block = cache.get(mask)
        if block is None:
            head = cache[None]
            block = "".join(
                f"{line_head(self.family, head, (name,))}1\n" for name in self.active(mask)
            )
            cache[mask] = block
        out.append(block)


@dataclass(frozen=True, slots=True)
class Labelled:
    """Series whose last label values come from the entity: ``get`` yields (labels, value).

    Used for info-style series (the port's state strings as labels, value 1) and a
    few small figures of the fleet and the SLA.
    """

    family: Family
    get: Callable[[Any], tuple[tuple[tuple[str, ...], Number | None], ...]]

    def series(self, entity: Any) -> Iterator[Series]:
        for extra, raw in self.get(entity):
            value = plain_value(raw)
            if value is not None:
                yield extra, value

    def compile(self, head: str) -> dict[Any, str]:
        return {None: head}

    def state(self, entity: Any) -> Hashable:
        """What the text depends on: equal states render equal text."""
        return self.get(entity)

    def render(self, entity: Any, cache: dict[Any, str], out: list[str]) -> None:
        self.render_state(self.get(entity), cache, out)

    def render_state(
        self,
        items: Any,
        cache: dict[Any, str],
        out: list[str],
    ) -> None:
        """Append a line per present value of ``items`` (what :meth:`state` returned)."""
        for extra, raw in items:
            text = None if raw is None else format_value(raw)
            if text is None:
                continue
            head = cache.get(extra)
            if head is None:
                if len(cache) > _LABELLED_HEADS_KEPT:  # label values from a node: bounded
                    cache = _reset(cache)
                head = cache[extra] = line_head(self.family, cache[None], extra)
            out.append(f"{head}{text}\n")


_LABELLED_HEADS_KEPT = 256
_KEYED_LAYOUTS_KEPT = 4


def _reset(cache: dict[Any, str]) -> dict[Any, str]:
    """Forget every cached text but the base head (kept under key None)."""
    head = cache[None]
    cache.clear()
    cache[None] = head
    return cache


@dataclass(frozen=True, slots=True)
class Keyed:
    """Series keyed by the entity's own names: attribute ``attr`` holds (name, value) pairs.

    The raw port counters: one series per counter name, about 22 per port and 400 per
    node, every value moving every tick. The names of a port hold still for a session,
    so the text of all of a port's series is one cached template filled by one ``%``.
    """

    family: Family
    attr: str

    def series(self, entity: Any) -> Iterator[Series]:
        for name, raw in getattr(entity, self.attr):
            value = plain_value(raw)
            if value is not None:
                yield (name,), value

    def compile(self, head: str) -> dict[Any, str]:
        return {None: head}

    def state(self, entity: Any) -> Hashable:
        """The (name, value) pairs; they move every tick, so the renderer does not compare them."""
        return getattr(entity, self.attr)

    def render(self, entity: Any, cache: dict[Any, str], out: list[str]) -> None:
        self.render_state(getattr(entity, self.attr), cache, out)

    def render_state(
        self,
        pairs: tuple[tuple[str, Number | None], ...],
        cache: dict[Any, str],
        out: list[str],
    ) -> None:
        """Append one line per present value of ``pairs``."""
        if not pairs:
            return
        names, values = zip(*pairs, strict=True)
        # A counter the port lacks is None on every tick: such gaps are part of the layout.
        present = tuple(map(is_not, values, repeat(None)))
        if False in present:
            values = tuple(compress(values, present))
        layout = (names, present)
        template = cache.get(layout)
        if template is None:
            if len(cache) > _KEYED_LAYOUTS_KEPT:
                cache = _reset(cache)
            head = cache[None]
            template = cache[layout] = line_template(
                [line_head(self.family, head, (n,)) for n in compress(names, present)]
            )
        if plain_values(values):
            out.append(template % values)
            return
        for name, raw in pairs:  # a non-finite or odd value: format sample by sample
            text = None if raw is None else format_value(raw)
            if text is not None:
                out.append(f"{line_head(self.family, cache[None], (name,))}{text}\n")


Rendered = Derived | OneHot | Flags | Labelled | Keyed
Spec = Column | Rendered


@dataclass(frozen=True, slots=True)
class EntityKind:
    """The series specs of one kind of entity (GPU, port, node) and its base labels."""

    base_labels: tuple[str, ...]
    specs: tuple[Spec, ...]

    def columns(self, slow: bool) -> tuple[Column, ...]:
        """The columns read every interval (``slow=False``) or on the slow cadence."""
        return tuple(s for s in self.specs if isinstance(s, Column) and s.slow == slow)

    @property
    def rendered(self) -> tuple[Rendered, ...]:
        return tuple(s for s in self.specs if not isinstance(s, Column))


def column_reader(columns: tuple[Column, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """One C-level call that reads every column attribute of an entity, as a tuple."""
    attrs = [c.attr for c in columns]
    if not attrs:
        return lambda entity: ()
    if len(attrs) == 1:
        one = attrgetter(attrs[0])
        return lambda entity: (one(entity),)
    return attrgetter(*attrs)


def family_text(family: Family, rows: Sequence[tuple[tuple[str, ...], float]]) -> str:
    """``family``'s header and one line per (label values, value), sorted; values that
    have no exposition form (NaN, infinite) are left out. For the small families the
    ledgers add after the tick's (docs/metrics.md), not the per-GPU hot path."""
    out = [family.header()]
    for labels, value in sorted(rows):
        text = format_value(value)
        if text is None:
            continue
        pairs = label_pairs(family.labels, labels)
        out.append(f"{family.name}{{{pairs}}} {text}\n" if pairs else f"{family.name} {text}\n")
    return "".join(out)
