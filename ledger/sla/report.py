"""The month's SLA claim: the result, each outage's evidence, daily figures, JSON form.

The JSON form is the contract of ``gpufleet sla --format json`` (keys in docs/sla.md);
Markdown and HTML are rendered from it, so all three always agree.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from history.gaps import MonitorGap
from history.reader import HistoryReader
from history.states import StateInterval
from ledger.sla.assess import compute_sla
from ledger.sla.claim_words import (
    PROJECTION,
    contract_note,
    downtime_text,
    money_withheld,
    unseen_slots,
)
from ledger.sla.degraded import degraded_appendix
from ledger.sla.math import HOUR_MS, Outage, SlaResult, maintenance_spans
from ledger.sla.period import DAY_MS
from ledger.sla.section import SlaSection
from ledger.sla.summary import ledger_for_month

MAX_EVIDENCE = 20  # events listed per outage; the count says how many there were
# A GPU event is recorded at the second the driver logged it, the node's state changes at
# the next tick that judged it: an XID 79 a second before the outage's start is its cause.
EVIDENCE_TOLERANCE_MS = 60_000


def iso(t_ms: int) -> str:
    """``t_ms`` as an ISO 8601 UTC time with a Z."""
    return datetime.fromtimestamp(t_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class SlaReport:
    """Everything the claim shows, ready to render."""

    result: SlaResult
    contract: SlaSection
    evidence: dict[tuple[str, int], list[dict[str, Any]]]
    hourly_util: list[tuple[int, float]]  # (hour start ms, fleet utilization %)
    gaps: tuple[MonitorGap, ...] = ()  # the monitor's own gaps with causes
    degraded: dict[str, Any] = field(default_factory=dict)  # the second ledger (no credit)
    # What the report read, for the evidence bundle to use again without the disk: the
    # reader, and the state intervals the claim was judged on (every interval that
    # started by the last day read, a superset of those inside a shortened period).
    history: HistoryReader | None = field(default=None, compare=False, repr=False)
    intervals: list[StateInterval] = field(default_factory=list, compare=False, repr=False)


def build_report(data_dir: Path, contract: SlaSection, month: str, now: float) -> SlaReport:
    """Compute the claim for ``month`` from the history in ``data_dir``."""
    history = HistoryReader(data_dir)  # every table below is read once
    period, inputs, as_of = ledger_for_month(history, month, now)
    result = compute_sla(contract, period, inputs, now_ms=as_of)
    first, last = period.first_day, period.last_day
    events = history.events(first, last)
    evidence = {
        (o.node, o.start_ms): _evidence(o, events) for o in (*result.outages, *result.disputed)
    }
    hourly = hourly_utilization(history, result.period.days())
    gaps = tuple(
        g for g in history.gaps(first, last)
        if g.end_ms > result.period.start_ms and g.start_ms < result.period.end_ms
    )  # fmt: skip
    degraded = degraded_appendix(history, period, inputs.intervals, events, as_of)
    return SlaReport(result, contract, evidence, hourly, gaps, degraded, history, inputs.intervals)


def _evidence(outage: Outage, events: pl.DataFrame) -> list[dict[str, Any]]:
    ts_ms = pl.col("ts").dt.epoch("ms")
    rows = events.filter(
        (pl.col("node") == outage.node)
        & (ts_ms >= outage.start_ms - EVIDENCE_TOLERANCE_MS)
        & (ts_ms <= outage.end_ms)
    ).sort("ts", maintain_order=True)
    return [
        {"ts": iso(round(r["ts"].timestamp() * 1000)), "kind": r["kind"], "gpu": r["gpu"],
         "uuid": r["uuid"], "code": r["code"], "detail": r["detail"]}
        for r in rows.iter_rows(named=True)
    ]  # fmt: skip


def hourly_utilization(history: HistoryReader, days: list[date]) -> list[tuple[int, float]]:
    """Fleet utilization per hour of ``days`` (weighted by readings), skipping damaged files.

    Summed file by file, in the order the files were written, so the figures come out
    to the same bits from the same history. Files written before ``util_samples``
    existed are left out, as the claim always left them out.
    """
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for frame, util_weighted in history.rollup_files(days):
        if not util_weighted:
            continue
        hourly = (
            frame.filter(pl.col("util_mean").is_not_null())
            .group_by(pl.col("ts").dt.truncate("1h").dt.epoch("ms").alias("hour"))
            .agg(
                (pl.col("util_mean").cast(pl.Float64) * pl.col("util_samples")).sum().alias("s"),
                pl.col("util_samples").cast(pl.Float64).sum().alias("w"),
            )
        )
        for hour, s, w in hourly.iter_rows():
            sums[int(hour)][0] += s
            sums[int(hour)][1] += w
    return [(h, s / w) for h, (s, w) in sorted(sums.items()) if w > 0]


def daily_figures(report: SlaReport) -> list[dict[str, Any]]:
    """Per day of the period: availability and coverage (%), and fleet utilization (%)."""
    result = report.result
    monitored: dict[int, int] = defaultdict(int)
    observed: dict[int, int] = defaultdict(int)  # weighted, less unknown and disputed
    down: dict[int, int] = defaultdict(int)
    capacity = result.committed_nodes * result.weight
    for piece in result.pieces:
        t = piece.start_ms
        while t < piece.end_ms:
            day = t - (t - result.period.start_ms) % DAY_MS
            cut = min(piece.end_ms, day + DAY_MS)
            monitored[day] += cut - t
            observed[day] += (cut - t) * (capacity - piece.unmonitored - piece.disputed)
            down[day] += (cut - t) * piece.shortfall
            t = cut
    util: dict[int, list[float]] = defaultdict(list)
    for hour, value in report.hourly_util:
        util[hour - (hour - result.period.start_ms) % DAY_MS].append(value)
    out = []
    for day in range(result.period.start_ms, result.period.end_ms, DAY_MS):
        span = min(DAY_MS, result.period.end_ms - day)
        avail = None
        if observed[day] > 0:
            avail = 100 * (1 - down[day] / observed[day])
        values = util.get(day)
        out.append({
            "date": iso(day)[:10],
            "availability_percent": avail,
            "coverage_percent": 100 * monitored[day] / span,
            "utilization_percent": sum(values) / len(values) if values else None,
        })  # fmt: skip
    return out


def _outage_json(report: SlaReport, outage: Outage) -> dict[str, Any]:
    found = report.evidence.get((outage.node, outage.start_ms), [])
    return {
        "node": outage.node,
        "resource_id": report.contract.resource_ids.get(outage.node),
        "start": iso(outage.start_ms),
        "end": iso(outage.end_ms),
        "ongoing": outage.ongoing,
        "minutes": round(outage.minutes, 3),
        "joined": outage.joined,
        "states": list(outage.states),
        "reasons": list(outage.reasons),
        "evidence": found[:MAX_EVIDENCE],
        "evidence_count": len(found),
    }


def to_json(report: SlaReport) -> dict[str, Any]:
    """The claim as the JSON object documented in docs/sla.md (money as decimal strings)."""
    r, c = report.result, report.contract
    availability = None if r.availability_pct is None else float(r.availability_pct)
    complete = r.period.end_ms == r.period.month_end_ms
    per_node_s = 1000 * r.weight  # weighted ms -> node-seconds
    unseen = unseen_slots(r, c)
    withheld = money_withheld(r, c)
    return {
        "month": r.period.month,
        "subject": c.claim_subject,
        "account_id": c.account_id,
        "contract_id": c.contract_id,
        "period": {"start": iso(r.period.start_ms), "end": iso(r.period.end_ms),
                   "complete": complete},
        "provisional": not complete,
        "observed_live": r.live,
        "claim_deadline": claim_deadline(report),
        "contract": contract_json(c),
        "monitored_seconds": r.monitored_ms / 1000,
        "period_seconds": (r.period.end_ms - r.period.start_ms) / 1000,
        "coverage_percent": float(r.coverage_pct),
        "coverage_by_node": {n: float(v) for n, v in sorted(r.node_coverage.items())},
        "unmonitored_node_seconds": r.unmonitored_ms / per_node_s,
        "disputed_node_seconds": r.disputed_ms / per_node_s,
        "maintenance_seconds": r.maintenance_ms / 1000,
        "availability_percent": availability,
        "slo_met": None if availability is None else availability >= float(c.slo_percent),
        "down_node_seconds": r.down_node_ms / per_node_s,
        "down_node_hours": r.down_node_ms / HOUR_MS / r.weight,
        "down_gpu_hours": r.down_node_ms / HOUR_MS * (1 if r.weight > 1 else c.gpus_per_node),
        "down_node_hours_text": downtime_text(r, AVAILABILITY_DIGITS),
        "unseen_slots": {"count": unseen.count, "resource_ids": unseen.resource_ids,
                         "text": unseen.text()},
        "contract_note": contract_note(c),
        "outages": [_outage_json(report, o) for o in r.outages if o.counted],
        "forgiven_outages": [_outage_json(report, o) for o in r.outages if not o.counted],
        "disputed": [_outage_json(report, o) for o in r.disputed],
        "coverage_log": coverage_log(report),
        "evidence_tolerance_seconds": EVIDENCE_TOLERANCE_MS / 1000,
        "instances": [
            {"node": i.node, "resource_id": c.resource_ids.get(i.node),
             "availability_percent": None if i.availability_pct is None
             else float(i.availability_pct),
             "tier_credit_percent": str(i.tier_credit_pct),
             "credit": None if withheld else str(i.credit)}
            for i in r.instances
        ],
        "tier_credit_percent": str(r.tier_credit_pct),
        "bill": str(r.bill),
        **_money(report),
        "credit_capped": r.capped,
        "currency": c.currency,
        "daily": daily_figures(report),
        "gpu_degraded_appendix": report.degraded,
    }  # fmt: skip


AVAILABILITY_DIGITS = 4  # decimals of a percent the claim prints availability with


def _money(report: SlaReport) -> dict[str, Any]:
    """The credits, or null with the reason and the figures as a labelled projection."""
    r = report.result
    figures = {"tiered_credit": str(r.tiered_credit), "pro_rata_credit": str(r.pro_rata_credit),
               "owed": str(r.owed)}  # fmt: skip
    withheld = money_withheld(r, report.contract)
    if withheld is None:
        return {**figures, "money_withheld": None, "projection": None}
    return {
        **dict.fromkeys(figures),
        "money_withheld": withheld,
        "projection": {**figures, "label": PROJECTION},
    }


def claim_deadline(report: SlaReport) -> str | None:
    """The last day to file the claim (the month's end plus the claim window), or None."""
    days = report.contract.claim_window_days
    if days is None:
        return None
    month_end = datetime.fromtimestamp(report.result.period.month_end_ms / 1000, UTC).date()
    return (month_end - timedelta(days=1) + timedelta(days=days)).isoformat()


# The cause a sharded history records for a shard's silence: "shard K/N silent"
# (cluster.node_coverage writes it; this room is below cluster, so the words are matched).
SHARD_GAP_PREFIX = "shard "


def coverage_log(report: SlaReport) -> list[dict[str, Any]]:
    """Every stretch of the period the monitor did not observe, with its cause.

    Causes the controller recorded (a stall, its network down) come from the gaps
    table; any other hole in coverage is "controller not running". A silent shard's
    stretch is listed too, though the other shards kept the fleet's coverage.
    """
    period = report.result.period
    covered = sorted(
        (p.start_ms, p.end_ms) for p in report.result.pieces
    )  # pieces tile the monitored time
    holes: list[tuple[int, int]] = []
    t = period.start_ms
    for s, e in covered:
        if s > t:
            holes.append((t, s))
        t = max(t, e)
    if t < period.end_ms:
        holes.append((t, period.end_ms))
    maintenance = maintenance_spans(report.contract, period)
    rows: list[dict[str, Any]] = []
    for s, e in holes:
        cause = "controller not running"
        for gap in report.gaps:
            if gap.start_ms < e and s < gap.end_ms:
                cause = gap.cause
        if any(ms <= s and e <= me for ms, me in maintenance):
            cause = "provider maintenance"
        rows.append({"start": iso(s), "end": iso(e), "seconds": (e - s) / 1000, "cause": cause})
    # A silent shard is no hole in the fleet's coverage (the other shards record), only in
    # its own nodes': its gap lies inside monitored time, recorded with its cause.
    for gap in report.gaps:
        inside = not any(s < gap.end_ms and gap.start_ms < e for s, e in holes)
        if inside and gap.cause.startswith(SHARD_GAP_PREFIX):
            seconds = (gap.end_ms - gap.start_ms) / 1000
            rows.append(
                {
                    "start": iso(gap.start_ms),
                    "end": iso(gap.end_ms),
                    "seconds": seconds,
                    "cause": gap.cause,
                }
            )
    rows.sort(key=lambda r: r["start"])
    return rows


def contract_json(c: SlaSection) -> dict[str, Any]:
    """The ``[sla]`` table as used (prices and percents as decimal strings)."""
    return {
        "committed_nodes": c.committed_nodes,
        "gpus_per_node": c.gpus_per_node,
        "gpu_hour_price": str(c.gpu_hour_price),
        "currency": c.currency,
        "slo_percent": str(c.slo_percent),
        "grace_minutes": c.grace_minutes,
        "unreachable_counts_as_down": c.unreachable_counts_as_down,
        "credit_model": c.credit_model,
        "tiers": [
            {"below": str(t.below), "credit_percent": str(t.credit_percent)} for t in c.tiers
        ],
        "downtime": c.downtime,
        "unit": c.unit,
        "scope": c.scope,
        "min_downtime_minutes": c.min_downtime_minutes,
        "merge_outages_within_seconds": c.merge_outages_within_seconds,
        "min_coverage_for_money": c.min_coverage_for_money,
        "credit_cap_percent": None if c.credit_cap_percent is None else str(c.credit_cap_percent),
        "claim_window_days": c.claim_window_days,
        "disputed_threshold_percent": str(c.disputed_threshold_percent),
        "disputed_counts_as_down": c.disputed_counts_as_down,
        "witness": list(c.witness),
        "maintenance": [
            {"start": w.start.isoformat(), "end": w.end.isoformat(), "note": w.note}
            for w in c.maintenance
        ],
    }
