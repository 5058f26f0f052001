"""What one stretch of a period's minutes adds to the period's delivery ledger.

Every figure of the ledger is a sum over minutes (time moved out of ``broken``, energy by
GPU, hour and class, the minutes counted from each energy source) or a run of
consecutive minutes (a deviation), so the ledger of a period is the sum of its
stretches' figures, with runs that meet at a stretch's edge joined. Two things cross an
edge: a below-floor run is idle only when it lasts ``idle_min_minutes`` (its length may
lie on both sides), and a minute's energy is the counter's rise since the minute before.
So a stretch is judged on its minutes with ``idle_min_minutes`` of minutes on each side
(:func:`context_ms`): a run that reaches past that is at least as long as the rule asks
on either reading, so each minute of the stretch gets the class a judgement of the whole
period gives it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import TypeVar

import polars as pl

from fleet.settings.contract_section import ContractSection
from ledger.delivery.breach import Breach
from ledger.delivery.class_energy import class_energy
from ledger.delivery.classes import NodeSpans, judge_minutes, moved_ms, sum_moved
from ledger.delivery.conformance import Run, breach_runs, join_runs
from ledger.delivery.energy import energy_use, period_energy
from ledger.delivery.gpu_terms import gpu_breaches
from ledger.delivery.node_terms import node_breaches

MINUTE_MS = 60_000
GPU_MJ_SCHEMA = {"node": pl.String, "gpu": pl.Int64, "mj": pl.Int64}
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class StretchFigures:
    """One stretch's share of the ledger's sums, and its runs of each contract term."""

    moved: pl.DataFrame  # node, gpu, cls, ms: ledger.delivery.classes.moved_ms
    gpu_mj: pl.DataFrame  # node, gpu, mj
    hour_mj: dict[int, int]
    sources: dict[str, int]  # minutes whose energy came from: counter | power | none
    class_hour_mj: dict[tuple[str, int], int]
    runs: tuple[list[Run], ...]  # per term, in the order of :func:`terms`


def context_ms(contract: ContractSection) -> int:
    """How far beyond a stretch its judgement reads: the idle rule's length (at least
    the minute before, for the energy counter's rise)."""
    return max(1, contract.idle_min_minutes) * MINUTE_MS


def terms(minutes: pl.DataFrame, ports: pl.DataFrame, contract: ContractSection) -> list[Breach]:
    """The contract's terms as judges hand them on, for ``minutes`` and ``ports`` (empty
    frames give the list of terms alone)."""
    frame = minutes.with_columns(t=pl.col("ts").dt.epoch("ms"))
    port_frame = ports.with_columns(t=pl.col("ts").dt.epoch("ms"))
    return gpu_breaches(frame, contract) + node_breaches(frame, port_frame, contract)


def stretch_figures(
    window: pl.DataFrame,
    ports: pl.DataFrame,
    spans: dict[str, NodeSpans],
    contract: ContractSection,
    lo: int,
    hi: int,
) -> StretchFigures:
    """The figures of the minutes starting in ``[lo, hi)``: ``window`` holds those
    minutes and their context (:func:`context_ms`; ``gpu_minutes`` with the
    ``delivery_minutes`` columns joined), ``ports`` the stretch's ``port_minutes``."""
    judged = judge_minutes(window, contract)
    t = pl.col("ts").dt.epoch("ms")
    own = judged.filter((t >= lo) & (t < hi))
    joules = period_energy(window, lo, hi)
    use = energy_use(joules)
    split = class_energy(joules, judged, spans)
    mine = window.filter((t >= lo) & (t < hi))
    return StretchFigures(
        moved_ms(own, spans, contract.gpus_per_node),
        pl.DataFrame(
            [(n, g, mj) for (n, g), mj in use.gpu_mj.items()], schema=GPU_MJ_SCHEMA, orient="row"
        ),
        use.hour_mj,
        {"counter": use.counter_minutes, "power": use.power_minutes, "none": use.unknown_minutes},
        split.hour_mj,
        tuple(breach_runs(b, lo, hi) for b in terms(mine, ports, contract)),
    )


def empty_figures(term_count: int) -> StretchFigures:
    """The figures of a stretch with no minutes."""
    return StretchFigures(
        sum_moved([]),
        pl.DataFrame(schema=GPU_MJ_SCHEMA),
        {},
        {},
        {},
        tuple([] for _ in range(term_count)),
    )


def add_figures(parts: list[StretchFigures]) -> StretchFigures:
    """The figures of consecutive stretches as one stretch's."""
    if len(parts) == 1:
        return parts[0]
    gpu_mj = pl.concat([p.gpu_mj for p in parts]).group_by("node", "gpu").agg(pl.col("mj").sum())
    return StretchFigures(
        sum_moved([p.moved for p in parts]),
        gpu_mj,
        add_counts(p.hour_mj for p in parts),
        add_counts(p.sources for p in parts),
        add_counts(p.class_hour_mj for p in parts),
        tuple(join_runs(list(term)) for term in zip(*(p.runs for p in parts), strict=True)),
    )


def add_counts(counts: Iterable[dict[K, int]]) -> dict[K, int]:
    """Sums by key; a key counted zero stays (the ledger lists what it saw)."""
    out: dict[K, int] = {}
    for count in counts:
        for key, amount in count.items():
            out[key] = out.get(key, 0) + amount
    return out
