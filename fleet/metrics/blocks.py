"""A node's GPUs as exposition text, and what the next scrape may reuse of it.

The text of eight GPUs is built column by column (one ``%`` per family), not GPU by
GPU; slow columns and one-hot states are reused while their values stay put, which
at 1 Hz is almost always.
"""

from __future__ import annotations

from typing import Any

from fleet.metrics.columns import Compiled, KindPlan
from fleet.model import GpuSnapshot

GpuKey = tuple[int, str, str]
"""(index, uuid, model): a GPU's label values besides its node."""


class GpuBlock:
    """The GPUs of one node with fixed labels: their cached heads, templates and texts.

    Args:
        plan: the GPU kind's rendering plan.
        node: the node's name.
        keys: the GPUs' (index, uuid, model), in order.
        previous: the node's block from an earlier scrape, whose compiled GPUs are reused.
    """

    keys: tuple[GpuKey, ...]
    entries: list[Compiled]

    def __init__(
        self, plan: KindPlan, node: str, keys: tuple[GpuKey, ...], previous: GpuBlock | None
    ) -> None:
        known: dict[GpuKey, Compiled] = {}
        if previous is not None:
            known = dict(zip(previous.keys, previous.entries, strict=True))
        self.plan = plan
        self.keys = keys
        self.entries = [known.get(k) or plan.compile((node, str(k[0]), k[1], k[2])) for k in keys]
        self.fast_heads = [e[0] for e in self.entries]
        self.slow_heads = [e[1] for e in self.entries]
        self.fast_templates = plan.fast.templates(self.fast_heads)
        self.slow_templates = plan.slow.templates(self.slow_heads)
        self.slow_values: list[tuple[Any, ...]] | None = None  # what slow_chunks show
        self.slow_chunks: dict[int, str] = {}
        # Per non-column spec: the GPUs' states it was last rendered for, and its text.
        self.spec_texts: list[tuple[tuple[Any, ...], str] | None] = [None] * len(plan.rendered)

    def render(self, gpus: tuple[GpuSnapshot, ...], parts: list[list[str]]) -> None:
        """Append the lines of ``gpus`` (whose keys are this block's) to ``parts``."""
        self.plan.fast.render_many(gpus, self.fast_heads, self.fast_templates, parts)
        self._refresh_slow(gpus)
        for slot, chunk in self.slow_chunks.items():
            parts[slot].append(chunk)
        self._render_specs(gpus, parts)

    def _refresh_slow(self, gpus: tuple[GpuSnapshot, ...]) -> None:
        """Rebuild the slow columns' text only when one of their values moved.

        Slow fields (ECC, retired pages, remapping, NVLink, ...) change every 10 s at
        most, and usually never.
        """
        slow = self.plan.slow
        values = list(map(slow.read, gpus))
        if values == self.slow_values:
            return
        parts: list[list[str]] = [[] for _ in range(max(slow.slots, default=-1) + 1)]
        slow.render_many(gpus, self.slow_heads, self.slow_templates, parts)
        self.slow_values = values
        self.slow_chunks = {slot: "".join(parts[slot]) for slot in set(slow.slots)}

    def _render_specs(self, gpus: tuple[GpuSnapshot, ...], parts: list[list[str]]) -> None:
        plan = self.plan
        specs = zip(plan.rendered, plan.rendered_slots, plan.rendered_states, strict=True)
        for i, (spec, slot, state_of) in enumerate(specs):
            states = tuple(map(state_of, gpus)) if state_of is not None else None
            last = self.spec_texts[i]
            if states is not None and last is not None and last[0] == states:
                parts[slot].append(last[1])
                continue
            lines: list[str] = []
            for gpu, entry in zip(gpus, self.entries, strict=True):
                spec.render(gpu, entry[2][i], lines)
            text = "".join(lines)
            if states is not None:
                self.spec_texts[i] = (states, text)
            parts[slot].append(text)
