"""The GPU energy of each class: each recorded GPU-minute's energy goes to the classes
its time went to (:mod:`ledger.delivery.classes`), in proportion.

A minute wholly observed goes to the class it was judged; a minute that the node's
broken or blind stretches cut goes partly to ``broken`` or ``unmonitored``. Energy is
counted in whole millijoules and the last part of a minute takes the rounding, so the
classes sum to the fleet's energy exactly.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import polars as pl

from ledger.delivery.classes import NodeSpans, split_whole
from ledger.sla.math import Span

MINUTE_MS = 60_000
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class ClassEnergy:
    """Millijoules by class, and by (class, hour start in ms) for the hour's intensity."""

    mj: dict[str, int]
    hour_mj: dict[tuple[str, int], int]


def class_energy(
    energy: pl.DataFrame, judged: pl.DataFrame, spans: dict[str, NodeSpans]
) -> ClassEnergy:
    """Split ``energy`` (``ledger.delivery.energy.period_energy``: ``node``, ``gpu``,
    ``ts``, ``t``, ``mj``) by the ``judged`` minutes' classes and the nodes' ``spans``."""
    frame = energy.join(judged, on=["node", "gpu", "ts"], how="left")
    whole, cut = split_whole(frame, spans)
    mj: dict[str, int] = defaultdict(int)
    hour_mj: dict[tuple[str, int], int] = defaultdict(int)
    # Nearly every minute lies wholly in an observed stretch: summed by class and hour.
    sums = whole.group_by("cls", hour=pl.col("t") - pl.col("t") % HOUR_MS).agg(pl.col("mj").sum())
    for cls, hour, amount in sums.iter_rows():
        mj[cls] += amount
        hour_mj[(cls, hour)] += amount
    for node, t, joules, cls in cut.select("node", "t", "mj", "cls").iter_rows():
        hour = t - t % HOUR_MS
        for part, amount in minute_parts(t, joules, spans.get(node), cls):
            mj[part] += amount
            hour_mj[(part, hour)] += amount
    return ClassEnergy(dict(mj), dict(hour_mj))


def minute_parts(
    t: int, mj: int, spans: NodeSpans | None, cls: str | None
) -> list[tuple[str, int]]:
    """The minute starting at ``t`` and its ``mj`` shared among the classes its time
    went to; all ``unmonitored`` for a node the history has no states of."""
    if spans is None:
        return [("unmonitored", mj)]
    lengths = [
        ("unmonitored", _overlap(t, spans.blind)),
        ("broken", _overlap(t, spans.broken)),
        (cls or "broken", _overlap(t, spans.observed)),  # observed, not judged: missing
    ]
    parts = [(c, ms) for c, ms in lengths if ms > 0]
    if not parts:
        return [("unmonitored", mj)]
    whole = sum(ms for _, ms in parts)
    shares = [(c, mj * ms // whole) for c, ms in parts[:-1]]
    return [*shares, (parts[-1][0], mj - sum(a for _, a in shares))]


def _overlap(t: int, spans: list[Span]) -> int:
    return sum(max(0, min(t + MINUTE_MS, e) - max(t, s)) for s, e in spans)
