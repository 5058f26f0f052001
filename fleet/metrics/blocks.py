"""A node's GPUs (or ports) as exposition text, and what the next scrape may reuse of it.

The text of a node's eight GPUs is built column by column (one ``%`` per family),
not GPU by GPU; slow columns and one-hot states are reused while their values stay
put, which at 1 Hz is almost always.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from fleet.metrics.columns import Compiled, KindPlan

EntityKey = tuple[Hashable, ...]
"""An entity's label values besides its node: (index, uuid, model) for a GPU."""


class EntityBlock:
    """Entities of one kind on one node, with fixed labels: cached heads, templates, texts.

    Args:
        plan: the kind's rendering plan.
        base: the base label values of an entity with a given key.
        keys: the entities' keys, in order.
        previous: the node's block from an earlier scrape, whose compiled entities are reused.
    """

    keys: tuple[EntityKey, ...]
    entries: list[Compiled]

    def __init__(
        self,
        plan: KindPlan,
        base: Callable[[EntityKey], tuple[str, ...]],
        keys: tuple[EntityKey, ...],
        previous: EntityBlock | None,
    ) -> None:
        known: dict[EntityKey, Compiled] = {}
        if previous is not None:
            known = dict(zip(previous.keys, previous.entries, strict=True))
        self.plan = plan
        self.keys = keys
        self.entries = [known.get(k) or plan.compile(base(k)) for k in keys]
        self.fast_heads = [e[0] for e in self.entries]
        self.slow_heads = [e[1] for e in self.entries]
        self.fast_templates = plan.fast.templates(self.fast_heads)
        self.slow_templates = plan.slow.templates(self.slow_heads)
        self.slow_values: list[tuple[Any, ...]] | None = None  # what slow_chunks show
        self.slow_chunks: dict[int, str] = {}
        # Per non-column spec: the entities' states it was last rendered for, and its text.
        self.spec_texts: list[tuple[tuple[Any, ...], str] | None] = [None] * len(plan.rendered)

    def render(self, entities: Sequence[Any], parts: list[list[str]]) -> None:
        """Append the lines of ``entities`` (whose keys are this block's) to ``parts``."""
        self.plan.fast.render_many(entities, self.fast_heads, self.fast_templates, parts)
        if self.plan.slow.columns:
            self._refresh_slow(entities)
            for slot, chunk in self.slow_chunks.items():
                parts[slot].append(chunk)
        self._render_specs(entities, parts)

    def _refresh_slow(self, entities: Sequence[Any]) -> None:
        """Rebuild the slow columns' text only when one of their values moved.

        Slow fields (ECC, retired pages, remapping, NVLink, ...) change every 10 s at
        most, and usually never.
        """
        slow = self.plan.slow
        values = list(map(slow.read, entities))
        if values == self.slow_values:
            return
        parts: list[list[str]] = [[] for _ in range(max(slow.slots) + 1)]
        slow.render_many(entities, self.slow_heads, self.slow_templates, parts)
        self.slow_values = values
        self.slow_chunks = {slot: "".join(parts[slot]) for slot in set(slow.slots)}

    def _render_specs(self, entities: Sequence[Any], parts: list[list[str]]) -> None:
        plan = self.plan
        specs = zip(plan.rendered, plan.rendered_slots, plan.rendered_states, strict=True)
        for i, (spec, slot, state_of) in enumerate(specs):
            states = tuple(map(state_of, entities))
            last = self.spec_texts[i]
            if last is not None and last[0] == states:
                parts[slot].append(last[1])
                continue
            lines: list[str] = []
            for entity, entry in zip(entities, self.entries, strict=True):
                spec.render(entity, entry[2][i], lines)
            text = "".join(lines)
            self.spec_texts[i] = (states, text)
            parts[slot].append(text)
