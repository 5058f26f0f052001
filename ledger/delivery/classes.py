"""Where every paid GPU-second went: working, idle, provider, broken or unmonitored.

A node's paid time is the period; each of its contracted GPUs is paid for all of it.
``unmonitored`` is the SLA ledger's: time outside the recorder's coverage and the
node's recorded ``unmonitored`` stretches (``ledger.sla.timeline``). The rest is
observed and judged per GPU and minute, first match wins: ``broken`` (the node
unreachable, broken for a reason other than some GPUs, or this GPU failed, lost or not
reported), ``provider`` (a provider process, and none of the renter's, ran on it while
it was active), ``working`` (SM activity, or
utilization where SM activity is missing, at or above the floor; a shorter pause than
``idle_min_minutes`` is still work), else ``idle``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from fleet.settings.contract_section import ContractSection
from history.ledger import LedgerInputs
from ledger.sla.math import Span, clip, merge_spans, monitored_spans, subtract
from ledger.sla.period import Period
from ledger.sla.section import SlaSection
from ledger.sla.timeline import Segment, node_timelines

MINUTE_MS = 60_000
CLASSES = ("working", "idle", "provider", "broken", "unmonitored")
_ANY_SLA = SlaSection(committed_nodes=1)
_SOME_GPUS = re.compile(r"^\d+ of \d+ GPUs healthy$")


@dataclass(frozen=True)
class NodeTime:
    """One node's GPU-milliseconds by GPU and class."""

    node: str
    gpu_ms: dict[int, dict[str, int]]

    def by_class(self) -> dict[str, int]:
        """The node's GPU-milliseconds per class, all of its GPUs together."""
        return {c: sum(per.get(c, 0) for per in self.gpu_ms.values()) for c in CLASSES}

    @property
    def paid_ms(self) -> int:
        """All of the node's paid GPU-milliseconds (the classes' sum)."""
        return sum(self.by_class().values())


@dataclass(frozen=True)
class NodeSpans:
    """A node's period split: blind, whole-node broken, and observed per-GPU time."""

    blind: list[Span]
    broken: list[Span]
    observed: list[Span]


def node_spans(segments: Iterable[Segment], monitored: list[Span], period: Period) -> NodeSpans:
    """Split ``period`` for one node from its SLA segments and the monitored spans."""
    blind_rec = merge_spans((s.start_ms, s.end_ms) for s in segments if s.kind == "unmonitored")
    whole = [(period.start_ms, period.end_ms)]
    seen = subtract(monitored, clip(blind_rec, period.start_ms, period.end_ms))
    recorded = merge_spans((s.start_ms, s.end_ms) for s in segments)
    seen = subtract(seen, subtract(whole, clip(recorded, period.start_ms, period.end_ms)))
    broken = clip(
        ((s.start_ms, s.end_ms) for s in segments if _whole_node_broken(s)),
        period.start_ms,
        period.end_ms,
    )
    broken = [(s, e) for s, e in _intersect(seen, broken)]
    return NodeSpans(subtract(whole, seen), broken, subtract(seen, broken))


def _whole_node_broken(segment: Segment) -> bool:
    if segment.state == "unreachable":
        return True
    if segment.state != "broken":
        return False
    return not segment.reasons or not all(_SOME_GPUS.match(r) for r in segment.reasons)


def _intersect(a: list[Span], b: list[Span]) -> list[Span]:
    out = []
    for s, e in a:
        for bs, be in b:
            lo, hi = max(s, bs), min(e, be)
            if hi > lo:
                out.append((lo, hi))
    return merge_spans(out)


def classify_period(
    period: Period,
    inputs: LedgerInputs,
    minutes: pl.DataFrame,
    contract: ContractSection,
    now_ms: int,
) -> list[NodeTime]:
    """Every node's GPU-milliseconds by class over ``period``.

    ``minutes`` is ``gpu_minutes`` joined with ``delivery_minutes`` (``provider_busy``)."""
    spans = period_spans(period, inputs, now_ms)
    return classify(spans, judge_minutes(minutes, contract), contract.gpus_per_node, period)


def period_spans(period: Period, inputs: LedgerInputs, now_ms: int) -> dict[str, NodeSpans]:
    """Each node's split of ``period`` (blind, whole-node broken, observed)."""
    # Only the ``unmonitored`` kind is read, and it does not depend on the SLA's terms.
    timelines = node_timelines(inputs.intervals, inputs.open_end_ms(now_ms), _ANY_SLA)
    monitored = monitored_spans(inputs.coverage, period)
    return {node: node_spans(segments, monitored, period) for node, segments in timelines.items()}


def no_spans(period: Period) -> NodeSpans:
    """The split of a node the history has no states of: blind all period."""
    return NodeSpans([(period.start_ms, period.end_ms)], [], [])


def classify(
    spans: dict[str, NodeSpans], judged: pl.DataFrame, gpus: int, period: Period
) -> list[NodeTime]:
    """Every node's GPU-milliseconds by class: ``spans`` laid over the ``judged`` minutes
    (:func:`judge_minutes`); a node with minutes and no states is blind all period."""
    nodes = set(judged["node"].unique().to_list())
    return node_times(spans, moved_ms(judged, spans, gpus), nodes, gpus, period)


MOVED_SCHEMA = {"node": pl.String, "gpu": pl.Int64, "cls": pl.String, "ms": pl.Int64}


def moved_ms(judged: pl.DataFrame, spans: dict[str, NodeSpans], gpus: int) -> pl.DataFrame:
    """The observed milliseconds each ``judged`` minute moves from ``broken`` (a GPU that
    did not report) to its class, summed per ``node``, ``gpu`` and ``cls`` (column
    ``ms``). A minute's share depends only on its own time, so the sums of disjoint
    stretches of minutes add up to the sum of them all."""
    frame = judged.filter(pl.col("gpu") < gpus)  # a GPU the contract does not pay for: out
    whole, cut = split_whole(frame.with_columns(t=pl.col("ts").dt.epoch("ms")), spans)
    rows = whole.group_by("node", "gpu", "cls").agg(ms=pl.len().cast(pl.Int64) * MINUTE_MS)
    cut_rows = [
        (node, gpu, cls, _overlap(t, t + MINUTE_MS, spans[node].observed))
        for node, gpu, t, cls in cut.select("node", "gpu", "t", "cls").iter_rows()
        if cls is not None and node in spans
    ]  # a node without spans, or an unjudged minute, moves nothing
    cuts = pl.DataFrame(cut_rows, schema=MOVED_SCHEMA, orient="row")
    return sum_moved([rows.cast(MOVED_SCHEMA), cuts])  # type: ignore[arg-type]


def sum_moved(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """:func:`moved_ms` frames of disjoint stretches as one."""
    if not frames:
        return pl.DataFrame(schema=MOVED_SCHEMA)
    both = pl.concat([f.cast(MOVED_SCHEMA) for f in frames])  # type: ignore[arg-type]
    return both.group_by("node", "gpu", "cls").agg(pl.col("ms").sum())


def node_times(
    spans: dict[str, NodeSpans],
    moved: pl.DataFrame,
    nodes: set[str],
    gpus: int,
    period: Period,
) -> list[NodeTime]:
    """Each node of ``spans`` and ``nodes`` (those with recorded minutes) with its
    GPU-milliseconds: its spans' lengths, the ``moved`` time taken out of broken."""
    per_node = {n: f for (n,), f in moved.partition_by("node", as_dict=True).items()}
    return [
        _node_time(node, spans.get(node) or no_spans(period), per_node.get(node), gpus)
        for node in sorted(set(spans) | nodes)
    ]


def split_whole(
    frame: pl.DataFrame, spans: dict[str, NodeSpans]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows of judged minutes, starting at ``t`` ms, that lie wholly inside one observed
    stretch of their node; the rest). Nearly every minute is of the first kind, which
    is summed without a loop; the rest are shared by milliseconds."""
    observed = pl.DataFrame(
        [(node, s, e) for node, split in spans.items() for s, e in split.observed],
        schema={"node": pl.String, "span_start": pl.Int64, "span_end": pl.Int64},
        orient="row",
    ).sort("span_start")
    frame = frame.with_columns(pl.col("t").cast(pl.Int64)).sort("t")
    # Both sides are sorted on the key as a whole, so within each node too.
    frame = frame.join_asof(
        observed, left_on="t", right_on="span_start", by="node", strategy="backward",
        check_sortedness=False,
    )  # fmt: skip
    inside = (
        pl.col("cls").is_not_null()
        & pl.col("span_end").is_not_null()
        & (pl.col("t") + MINUTE_MS <= pl.col("span_end"))
    ).fill_null(False)
    return frame.filter(inside), frame.filter(~inside)


def judge_minutes(minutes: pl.DataFrame, contract: ContractSection) -> pl.DataFrame:
    """Each GPU-minute's class as its readings say (``broken``, ``provider``, ``working``,
    ``idle``), before the node's time is laid over it."""
    activity = pl.coalesce(pl.col("sm_active_mean"), pl.col("util_mean"))
    below = activity.is_null() | (activity < contract.working_floor_percent)
    frame = minutes.unique(["node", "gpu", "ts"], keep="first").sort("node", "gpu", "ts")
    frame = frame.with_columns(below=below)
    # A below-floor run is idle only when it lasts idle_min_minutes (consecutive minutes).
    gap = pl.col("ts").diff().over("node", "gpu").dt.total_milliseconds() != MINUTE_MS
    changed = (pl.col("below") != pl.col("below").shift(1).over("node", "gpu")) | gap
    frame = frame.with_columns(run=changed.fill_null(True).cum_sum().over("node", "gpu"))
    frame = frame.with_columns(run_len=pl.len().over("node", "gpu", "run"))
    idle = pl.col("below") & (pl.col("run_len") >= contract.idle_min_minutes)
    # A provider process that only holds memory on an idle GPU is not provider time.
    busy = pl.col("provider_busy").fill_null(False) & ~pl.col("below")
    failed = pl.col("verdict").is_in(["fail", "lost"])
    cls = (
        pl.when(failed).then(pl.lit("broken"))
        .when(busy).then(pl.lit("provider"))
        .when(idle).then(pl.lit("idle"))
        .otherwise(pl.lit("working"))
    )  # fmt: skip
    return frame.with_columns(cls=cls).select("node", "gpu", "ts", "cls")


def _node_time(node: str, spans: NodeSpans, moved: pl.DataFrame | None, gpus: int) -> NodeTime:
    blind, broken, observed = (_length(x) for x in (spans.blind, spans.broken, spans.observed))
    gpu_ms = {
        g: {**dict.fromkeys(CLASSES, 0), "unmonitored": blind, "broken": broken + observed}
        for g in range(gpus)
    }
    # Each reported minute moves its observed part out of broken: observed time a GPU
    # did not report is a missing GPU.
    for gpu, cls, ms in () if moved is None else moved.select("gpu", "cls", "ms").iter_rows():
        gpu_ms[gpu][cls] += ms
        gpu_ms[gpu]["broken"] -= ms
    return NodeTime(node, gpu_ms)


def _length(spans: list[Span]) -> int:
    return sum(e - s for s, e in spans)


def _overlap(lo: int, hi: int, spans: list[Span]) -> int:
    return sum(max(0, min(hi, e) - max(lo, s)) for s, e in spans)
