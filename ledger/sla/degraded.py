"""The second ledger: GPU-degraded time, per node and cause. Never part of the credit.

Public SLAs count loss of connectivity; a reachable node with a lost GPU, an XID or a
slow link is argued under an MSA or an RMA instead. This appendix gives that argument
its numbers while keeping them out of the claim, so the claim does not look padded:

- GPU-hours by worst verdict from ``gpu_minutes`` (``fail``, ``lost``, and ``warn``,
  which is where thermal/power slowdown and pending remaps land), per node;
- hours of each reason a node was ``broken`` for (``GPU 3: xid 79``, a port rate below
  expected, an NVLink down), per node, from ``node_states``;
- event counts (XIDs by code, link events) per node, from ``events``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import polars as pl

from history.reader import HistoryReader
from history.states import StateInterval
from ledger.sla.period import Period

DEGRADED_VERDICTS = ("fail", "lost", "warn")


def gpu_hours_by_verdict(history: HistoryReader, period: Period) -> dict[str, dict[str, float]]:
    """Per node: GPU-hours whose worst verdict in the minute was fail, lost or warn."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(DEGRADED_VERDICTS, 0.0))
    lo, hi = period.start_ms, period.end_ms
    # File by file, in the order written: the sums add up to the same bits every time.
    for frame, _ in history.rollup_files(period.days()):
        counts = (
            frame.filter(
                pl.col("verdict").is_in(DEGRADED_VERDICTS),
                pl.col("ts").dt.epoch("ms").is_between(lo, hi, closed="left"),
            )
            .group_by("node", "verdict")
            .len()
        )
        for node, verdict, minutes in counts.iter_rows():
            out[node][verdict] += minutes / 60
    return {node: dict(v) for node, v in sorted(out.items())}


def broken_hours_by_reason(
    intervals: list[StateInterval], period: Period, open_end_ms: int
) -> dict[str, dict[str, float]]:
    """Per node: hours of each reason the node was broken for, inside the period."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in intervals:
        if row.state != "broken":
            continue
        end = open_end_ms if row.end_ms is None else row.end_ms
        overlap = min(end, period.end_ms) - max(row.start_ms, period.start_ms)
        if overlap <= 0:
            continue
        for reason in row.reasons or ("broken",):
            out[row.node][reason] += overlap / 3_600_000
    return {node: dict(sorted(v.items())) for node, v in sorted(out.items())}


def event_counts(events: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Per node: how many events of each kind (XIDs by code) were recorded."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in events.iter_rows(named=True):
        label = row["kind"] if row["code"] is None else f"{row['kind']} {row['code']}"
        out[row["node"]][label] += 1
    return {node: dict(sorted(v.items())) for node, v in sorted(out.items())}


def degraded_appendix(
    history: HistoryReader,
    period: Period,
    intervals: list[StateInterval],
    events: pl.DataFrame,
    open_end_ms: int,
) -> dict[str, Any]:
    """The appendix as JSON: ``gpu_hours``, ``broken_hours_by_reason``, ``events``."""
    return {
        "note": "GPU-degraded time is not part of the SLA credit.",
        "gpu_hours": gpu_hours_by_verdict(history, period),
        "broken_hours_by_reason": broken_hours_by_reason(intervals, period, open_end_ms),
        "events": event_counts(events),
    }
