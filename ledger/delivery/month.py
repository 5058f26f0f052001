"""The delivery ledger of a period that grows, kept between refreshes: closed hours are
judged once, only the open hour again.

A running fleet refreshes its month-to-date figures while the month's history grows,
and judging the whole month each time costs more with every hour recorded (about 2 s
of CPU per hour of a 1,000-node fleet's history). The ledger is a sum over stretches
(:mod:`ledger.delivery.stretch`), so each closed hour's figures are kept with what they
were computed from: the signatures of the files whose minutes reach the hour and its
context, the idle rule's context after the hour (its rows, where that file is still
written), the contract, and each node's spans within the hour. Any of these changing
judges the hour again; so a kept hour equals a fresh judgement of it, and the ledger
equals :func:`ledger.delivery.ledger.build_ledger` of the same history exactly.
Closed days' hours are added once into a day's figures.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from datetime import timedelta

import polars as pl

from fleet.settings.contract_section import ContractSection
from history.layout import DELIVERY_MINUTES, GPU_MINUTES, PORT_MINUTES, SCHEMAS, day_start_ms
from history.ledger import read_ledger
from history.reader import HistoryReader
from ledger.delivery.class_energy import ClassEnergy
from ledger.delivery.classes import NodeSpans, no_spans, node_times, period_spans
from ledger.delivery.conformance import priced
from ledger.delivery.energy import EnergyUse
from ledger.delivery.files import FileFacts, HistoryFiles, Signature
from ledger.delivery.ledger import (
    PORT_SCHEMA,
    DeliveryLedger,
    build_ledger,
    finish_ledger,
)
from ledger.delivery.section import EnergySection
from ledger.delivery.stretch import (
    StretchFigures,
    add_figures,
    context_ms,
    empty_figures,
    stretch_figures,
    terms,
)
from ledger.sla.math import Span, merge_spans, subtract
from ledger.sla.period import Period

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@dataclass(frozen=True)
class KeptHour:
    """One closed hour's figures and what they were computed from."""

    figures: StretchFigures | None  # None once added into its day's
    own: tuple[Signature, ...]  # files reaching the hour or the context before it
    after: tuple[Signature, ...]  # files reaching only the context after it
    after_rows: pl.DataFrame  # that context as the idle rule reads it


@dataclass
class _Inputs:
    """One refresh's reading of history: the files and the read bounds."""

    gpu: list[FileFacts]
    extra: list[FileFacts]
    ports: list[FileFacts]
    read_lo: int
    read_hi: int
    context: int


class DeliveryMonth:
    """The delivery ledger of a growing period, each closed hour judged once."""

    def __init__(self) -> None:
        self._files = HistoryFiles()
        self._hours: dict[int, KeptHour] = {}
        self._days: dict[int, StretchFigures] = {}  # closed days' sums, by their start
        self._spans: dict[str, NodeSpans] = {}
        self._scope: tuple[object, ...] | None = None
        self._period: Period | None = None
        self.judged_hours = (
            0  # hours judged since this month was made (each refresh's open one too)
        )
        self.empty_hours = 0  # of those, hours no file reaches: judged without reading

    def build(
        self,
        history: HistoryReader,
        period: Period,
        contract: ContractSection,
        energy: EnergySection,
        now_ms: int,
    ) -> DeliveryLedger:
        """The ledger of ``period`` as :func:`build_ledger` gives it."""
        try:
            return self._build(history, period, contract, energy, now_ms)
        finally:
            self._files.let_go()

    def _build(
        self,
        history: HistoryReader,
        period: Period,
        contract: ContractSection,
        energy: EnergySection,
        now_ms: int,
    ) -> DeliveryLedger:
        scope = (history.data_dir, period.start_ms, contract.model_dump_json())
        if scope != self._scope or period.start_ms % HOUR_MS:
            self._hours, self._days, self._spans, self._scope = {}, {}, {}, scope
            self._period = None
        days = period.days()
        inputs = read_ledger(history, days[0], days[-1], now_ms / 1000)
        spans = period_spans(period, inputs, now_ms)
        self._drop_hours(changed_spans(self._spans, spans, self._period, period))
        self._spans, self._period = spans, period
        found = self._read(history, period, contract)
        # No minutes file at all (a fresh data dir): the whole judgement reads nothing
        # and costs ~10 ms, where walking the month's empty hours cost ~140 ms
        # (bench/bench_month_first_build.py).
        nothing = not (found.gpu or found.extra or found.ports)
        if nothing or not _by_the_hour(found) or period.start_ms % HOUR_MS:
            return build_ledger(history, period, contract, energy, now_ms)
        parts = self._stretches(found, spans, contract, period)
        total = add_figures(parts)
        seen = {n for f in found.gpu for n in f.nodes}
        nodes = node_times(spans, total.moved, seen, contract.gpus_per_node, period)
        kinds = terms(_no_minutes(), pl.DataFrame(schema=PORT_SCHEMA), contract)
        deviations = priced(list(zip(kinds, total.runs, strict=True)), contract)
        return finish_ledger(
            history, period, contract, energy, (nodes, deviations, *_energy_of(total))
        )

    def _read(self, history: HistoryReader, period: Period, contract: ContractSection) -> _Inputs:
        days = period.days()
        wanted = [days[0] - timedelta(days=1), *days]
        open_from = period.end_ms - period.end_ms % HOUR_MS - 2 * context_ms(contract)
        data_dir = history.data_dir
        found = _Inputs(
            self._files.scan(data_dir, GPU_MINUTES, wanted, open_from),
            self._files.scan(data_dir, DELIVERY_MINUTES, wanted, open_from),
            self._files.scan(data_dir, PORT_MINUTES, days, open_from),
            day_start_ms(wanted[0]),
            day_start_ms(days[-1]) + DAY_MS,
            context_ms(contract),
        )
        self._files.forget_missing({f.path for f in (*found.gpu, *found.extra, *found.ports)})
        return found

    def _drop_hours(self, changed: list[Span]) -> None:
        for start in list(self._hours):
            if any(lo < start + HOUR_MS and hi > start for lo, hi in changed):
                del self._hours[start]

    def _stretches(
        self,
        found: _Inputs,
        spans: dict[str, NodeSpans],
        contract: ContractSection,
        period: Period,
    ) -> list[StretchFigures]:
        """Each closed day's figures, then each hour's of the open day (the last one
        open), in time order. A closed day keeps only its sum (a 1,000-node fleet's hour
        is about half a MiB of figures); an hour of it judged again judges the day."""
        term_count = len(terms(_no_minutes(), pl.DataFrame(schema=PORT_SCHEMA), contract))
        out: list[StretchFigures] = []
        days = {}
        for day in range(period.start_ms, period.end_ms, DAY_MS):
            hours = range(day, min(day + DAY_MS, period.end_ms), HOUR_MS)
            closed_day = day + DAY_MS <= period.end_ms
            known = self._days.get(day) if closed_day else None
            if known is not None and all(self._kept(lo, found) is not None for lo in hours):
                days[day] = known
                out.append(known)
                continue
            if known is not None:  # an hour of it changed: its figures are gone
                for lo in hours:
                    self._hours.pop(lo, None)
            parts = [self._hour(lo, found, spans, contract, period, term_count) for lo in hours]
            if closed_day:
                days[day] = add_figures(parts)
                out.append(days[day])
                for lo in hours:
                    self._hours[lo] = replace(self._hours[lo], figures=None)
            else:
                out.extend(parts)
        self._days = days
        for start in [s for s in self._hours if not period.start_ms <= s < period.end_ms]:
            del self._hours[start]
        return out

    def _hour(
        self,
        lo: int,
        found: _Inputs,
        spans: dict[str, NodeSpans],
        contract: ContractSection,
        period: Period,
        term_count: int,
    ) -> StretchFigures:
        """The figures of the hour from ``lo``: kept, or judged (and kept when closed)."""
        closed = lo + HOUR_MS <= period.end_ms
        kept = self._kept(lo, found) if closed else None
        if kept is None or kept.figures is None:
            hi = min(lo + HOUR_MS, period.end_ms)
            kept = self._judge(lo, hi, found, spans, contract, term_count)
            if closed:
                self._hours[lo] = kept
        self._files.let_go(lo + HOUR_MS - found.context)
        assert kept.figures is not None
        return kept.figures

    def _kept(self, lo: int, found: _Inputs) -> KeptHour | None:
        kept = self._hours.get(lo)
        if kept is None:
            return None
        own, after = _signatures(lo, lo + HOUR_MS, found)
        if kept.own != own:
            return None
        if kept.after != after:
            hi = lo + HOUR_MS
            rows = _after_rows(self._window(found, hi, min(hi + found.context, found.read_hi)))
            if not rows.equals(kept.after_rows):
                return None
        return kept

    def _judge(
        self,
        lo: int,
        hi: int,
        found: _Inputs,
        spans: dict[str, NodeSpans],
        contract: ContractSection,
        term_count: int,
    ) -> KeptHour:
        self.judged_hours += 1
        own, after = _signatures(lo, hi, found)
        if not own and not after:
            # No file reaches the hour or its context: the hour is empty without reading
            # (a month's first build judges every hour since the 1st; with history of a
            # few days, most are empty, and three empty frames an hour cost ~2 s of CPU
            # at start-up).
            self.empty_hours += 1
            return KeptHour(empty_figures(term_count), own, after, _no_after_rows())
        wlo, whi = max(lo - found.context, found.read_lo), min(hi + found.context, found.read_hi)
        window = self._window(found, wlo, whi)
        if window.is_empty():
            return KeptHour(empty_figures(term_count), own, after, _after_rows(window))
        ports = self._files.rows(found.ports, PORT_MINUTES, lo, hi)
        ports = ports.select(PORT_SCHEMA.keys()).unique(["ts", "node", "port"], keep="first")
        figures = stretch_figures(window, ports, spans, contract, lo, hi)
        t = pl.col("ts").dt.epoch("ms")
        return KeptHour(figures, own, after, _after_rows(window.filter(t >= hi)))

    def _window(self, found: _Inputs, lo: int, hi: int) -> pl.DataFrame:
        """``gpu_minutes`` of ``[lo, hi)`` with the ``delivery_minutes`` columns joined,
        as ``ledger.delivery.ledger.read_minutes`` reads the whole period."""
        gpu = self._files.rows(found.gpu, GPU_MINUTES, lo, hi)
        extra = self._files.rows(found.extra, DELIVERY_MINUTES, lo, hi)
        extra = extra.unique(["ts", "node", "gpu"], keep="first")
        return gpu.join(extra, on=["ts", "node", "gpu"], how="left")


def _by_the_hour(found: _Inputs) -> bool:
    """Whether hours can be judged apart: every minute starts on a whole minute (none
    straddles an hour's edge) and lies in the days read (a file of another day's
    minutes takes part in the whole period's judgement wherever it lies)."""
    minutes = (*found.gpu, *found.extra)
    inside = all(
        f.first_ms is None or found.read_lo <= f.first_ms <= (f.last_ms or 0) < found.read_hi
        for f in minutes
    )
    return inside and all(f.aligned for f in (*minutes, *found.ports))


def _signatures(
    lo: int, hi: int, found: _Inputs
) -> tuple[tuple[Signature, ...], tuple[Signature, ...]]:
    """(files reaching the hour or the context before it, files reaching only the
    context after it)."""
    wlo, whi = max(lo - found.context, found.read_lo), min(hi + found.context, found.read_hi)
    minutes = (*found.gpu, *found.extra)
    own = [f.signature for f in minutes if f.meets(wlo, hi)]
    own += [f.signature for f in found.ports if f.meets(lo, hi)]
    after = [f.signature for f in minutes if f.meets(hi, whi) and not f.meets(wlo, hi)]
    return tuple(own), tuple(after)


def _after_rows(window: pl.DataFrame) -> pl.DataFrame:
    """What the idle rule reads of the minutes after an hour: which GPU-minutes exist and
    their activity (``ledger.delivery.classes.judge_minutes`` keeps each one's first)."""
    frame = window.unique(["node", "gpu", "ts"], keep="first")
    frame = frame.select("node", "gpu", "ts", "sm_active_mean", "util_mean")
    return frame.sort("node", "gpu", "ts")


@functools.cache
def _no_after_rows() -> pl.DataFrame:
    """:func:`_after_rows` of an hour with no minutes (one frame, never changed)."""
    return _after_rows(_no_minutes())


def _no_minutes() -> pl.DataFrame:
    frame = pl.DataFrame(schema=SCHEMAS[GPU_MINUTES])
    extra = {k: v for k, v in SCHEMAS[DELIVERY_MINUTES].items() if k not in frame.columns}
    return frame.with_columns(pl.lit(None, dtype).alias(name) for name, dtype in extra.items())


def changed_spans(
    old: dict[str, NodeSpans],
    new: dict[str, NodeSpans],
    old_period: Period | None,
    period: Period,
) -> list[Span]:
    """Where any node's split differs between two refreshes (a node without states is
    blind all period, as the ledger counts it)."""
    changed: list[Span] = []
    for node in old.keys() | new.keys():
        a = old.get(node) or (None if old_period is None else no_spans(old_period))
        b = new.get(node) or no_spans(period)
        if a == b:
            continue
        if a is None:
            return [(period.start_ms, period.end_ms)]
        for x, y in ((a.blind, b.blind), (a.broken, b.broken), (a.observed, b.observed)):
            changed += subtract(x, y) + subtract(y, x)
    return merge_spans(changed)


def _energy_of(total: StretchFigures) -> tuple[EnergyUse, ClassEnergy]:
    gpu = total.gpu_mj.sort("node", "gpu")
    node = gpu.group_by("node").agg(pl.col("mj").sum()).sort("node")
    use = EnergyUse(
        {(n, g): mj for n, g, mj in gpu.iter_rows()},
        dict(sorted(total.hour_mj.items())),
        total.sources.get("counter", 0),
        total.sources.get("power", 0),
        total.sources.get("none", 0),
        dict(node.iter_rows()),
    )
    by_class: dict[str, int] = {}
    for (cls, _), mj in total.class_hour_mj.items():
        by_class[cls] = by_class.get(cls, 0) + mj
    return use, ClassEnergy(by_class, dict(total.class_hour_mj))
