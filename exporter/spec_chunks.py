"""A chunk's lines of one non-column spec (one-hot, flags, labelled, derived) from its
entities' states and label heads, with no cache per entity.

Each entity used to keep, per spec, a small dict of its finished blocks (``{None: head,
"ok": block}``): ~90,000 dicts and ~30 MiB at 1,000 nodes, kept between scrapes. But a
chunk's text of such a spec is reused whole while its states hold still (see
:class:`exporter.blocks.EntityBlock`), so a block is only built when a state moves:
here from a pattern shared by every entity (``name{%s,verdict="ok"} 1\\n...``, one per
family and state, bounded) filled with the entity's label head.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from exporter.families import (
    Derived,
    Family,
    Flags,
    Keyed,
    Labelled,
    OneHot,
    Rendered,
    format_value,
    line_head,
)

_HEAD = "\x00"
"""Stands for the label head while a pattern is built (the extras here are constants)."""


def _as_pattern(text: str) -> str:
    return text.replace("%", "%%").replace(_HEAD, "%s")


@lru_cache(maxsize=1024)  # states partly come from nodes: bounded
def _one_hot(family: Family, states: tuple[str, ...], current: str) -> tuple[str, int]:
    """The pattern of one entity's one-hot block for state ``current``, and its heads."""
    text = "".join(f"{line_head(family, _HEAD, (s,))}{1 if s == current else 0}\n" for s in states)
    return _as_pattern(text), len(states)


@lru_cache(maxsize=1024)  # masks come from nodes: bounded
def _flags(spec: Flags, mask: int) -> tuple[str, int]:
    """The pattern of one entity's lines for bitmask ``mask``, and its heads."""
    names = tuple(spec.active(mask))
    text = "".join(f"{line_head(spec.family, _HEAD, (name,))}1\n" for name in names)
    return _as_pattern(text), len(names)


def render_chunk(
    spec: Rendered, states: Sequence[Any], heads: Sequence[str], out: list[str]
) -> None:
    """Append the lines of ``spec`` for entities in ``states`` (what ``spec.state`` gave,
    or the attribute a one-hot or bitmask reads) whose label heads are ``heads``."""
    if isinstance(spec, OneHot):
        family, choices = spec.family, spec.states
        for state, head in zip(states, heads, strict=True):
            if state is not None:
                pattern, count = _one_hot(family, choices, state)
                out.append(pattern % ((head,) * count))
    elif isinstance(spec, Flags):
        for mask, head in zip(states, heads, strict=True):
            if mask is not None:
                pattern, count = _flags(spec, mask)
                out.append(pattern % ((head,) * count))
    elif isinstance(spec, Derived):
        family = spec.family
        for value, head in zip(states, heads, strict=True):
            text = None if value is None else format_value(value)
            if text is not None:
                out.append(f"{line_head(family, head, ())}{text}\n")
    elif isinstance(spec, Labelled):
        family = spec.family
        for items, head in zip(states, heads, strict=True):
            for extra, raw in items:
                text = None if raw is None else format_value(raw)
                if text is not None:
                    out.append(f"{line_head(family, head, extra)}{text}\n")
    elif isinstance(spec, Keyed):  # the one-entity way; chunks use exporter.blocks
        for pairs, head in zip(states, heads, strict=True):
            spec.render_state(pairs, {None: head}, out)
