"""The fabric ladder: all-reduce across 2, 4, 8, ... nodes, and bisection to culprits.

The first rung runs every disjoint pair of nodes at once (one round): their median is
the fleet's own 2-node figure, the ``measured`` denominator, so a slow node in a pair
cannot set the bar for everyone. Each later rung runs the first 4, 8, ... healthy
nodes as one group, up to all of them. A step below ``fraction`` of the denominator,
or one that hangs past the step timeout, is bisected: half of the suspects run with
nodes already seen healthy, and the half that fails holds the culprit, so a single
culprit among k suspects costs ceil(log2 k) extra runs. The rung is then run again
without the culprits.

Everything here is pure scheduling over an injected :data:`StepRunner`, so the same
code drives the SSH launcher and the bench's recorded timings.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from campaign.model import Evidence, FabricStep

Purpose = Literal["ladder", "bisect", "soak"]
StepRunner = Callable[[tuple[str, ...], Purpose], Awaitable[FabricStep]]


@dataclass(slots=True)
class LadderRun:
    """What the ladder found: its steps, the denominator it judged by, the culprits."""

    denominator_gbps: float | None
    floor_gbps: float | None = None
    steps: list[FabricStep] = field(default_factory=list)
    culprits: dict[str, Evidence] = field(default_factory=dict)
    rounds: int = 0


def rung_sizes(nodes: int) -> list[int]:
    """2, 4, 8, ... and finally ``nodes`` itself (when it is not a power of two)."""
    sizes, size = [], 2
    while size < nodes:
        sizes.append(size)
        size *= 2
    return [*sizes, nodes] if nodes >= 2 else []


def pairs(nodes: Sequence[str]) -> list[tuple[str, ...]]:
    """Disjoint pairs in order; an odd last node joins the last pair."""
    groups = [tuple(nodes[i : i + 2]) for i in range(0, len(nodes) - 1, 2)]
    if len(nodes) % 2 and groups:
        groups[-1] = (*groups[-1], nodes[-1])
    return groups


class Ladder:
    """Runs the ladder over ``run_step`` and judges each step against the floor."""

    def __init__(
        self, run_step: StepRunner, fraction: float, denominator_gbps: float | None
    ) -> None:
        self._run_step = run_step
        self._fraction = fraction
        self.result = LadderRun(denominator_gbps)

    async def run(self, nodes: Sequence[str]) -> LadderRun:
        """Climb every rung for ``nodes``; returns the steps and the culprits found."""
        if len(nodes) < 2:
            return self.result
        reference = await self._pair_round(list(nodes))
        size = 4
        # Two healthy nodes or fewer: the pair round has measured all there is.
        while len(healthy := [n for n in nodes if n not in self.result.culprits]) > 2:
            group = tuple(healthy[:size])
            step = await self._judged(group, "ladder")
            if step.status != "ok":
                suspects = [n for n in group if n not in reference]
                await self._isolate(suspects or list(group), reference, step)
                continue  # the same rung again, without the culprits
            reference = list(group)
            if len(group) == len(healthy):
                break
            size *= 2
        return self.result

    async def _pair_round(self, nodes: list[str]) -> list[str]:
        groups = pairs(nodes)
        self.result.rounds += 1
        raw = await asyncio.gather(*(self._run_step(g, "ladder") for g in groups))
        figures = [s.busbw_gbps for s in raw if s.status == "ok" and s.busbw_gbps is not None]
        if self.result.denominator_gbps is None and figures:
            self.result.denominator_gbps = statistics.median(figures)
        if self.result.denominator_gbps is not None:
            self.result.floor_gbps = self._fraction * self.result.denominator_gbps
        judged = [self._judge(s) for s in raw]
        self.result.steps.extend(judged)
        reference = [n for s in judged if s.status == "ok" for n in s.nodes]
        for step in judged:
            if step.status != "ok":
                await self._isolate(list(step.nodes), reference, step)
        return reference

    async def _isolate(self, suspects: list[str], reference: list[str], failed: FabricStep) -> None:
        """Bisect ``suspects`` (which made ``failed`` fail) down to one culprit."""
        while len(suspects) > 1:
            half = suspects[: len(suspects) // 2]
            pad = reference[: max(0, 2 - len(half))]
            if len(half) + len(pad) < 2:
                break  # no healthy node to run half of them against
            step = await self._judged((*half, *pad), "bisect")
            if step.status == "ok":
                reference = [*reference, *half]
                suspects = suspects[len(half) :]
            else:
                suspects, failed = half, step
        for node in suspects:
            self.result.culprits[node] = self._evidence(failed, len(suspects) > 1)

    async def _judged(self, group: tuple[str, ...], purpose: Purpose) -> FabricStep:
        self.result.rounds += 1
        step = self._judge(await self._run_step(group, purpose))
        self.result.steps.append(step)
        return step

    def _judge(self, step: FabricStep) -> FabricStep:
        floor = self.result.floor_gbps
        step = replace(step, floor_gbps=floor)
        if step.status == "ok" and floor is not None and (step.busbw_gbps or 0.0) < floor:
            return replace(step, status="slow")
        return step

    def _evidence(self, step: FabricStep, unresolved: bool) -> Evidence:
        cause = {"slow": "fabric_slow", "hung": "fabric_hang"}.get(step.status, "fabric_failed")
        where = " (could not be narrowed: no healthy peer)" if unresolved else ""
        figure = f"{step.busbw_gbps:.3g} GB/s" if step.busbw_gbps is not None else "no figure"
        return Evidence(
            stage="fabric",
            cause=cause,
            message=f"all-reduce across {', '.join(step.nodes)}: {step.status}, {figure}"
            f"{'; ' + step.detail if step.detail else ''}{where}",
            measured=step.busbw_gbps,
            threshold=step.floor_gbps,
            peer_median=self.result.denominator_gbps,
            at=step.started_at,
        )
