"""Month-to-date SLA figures for the dashboard header (cheap: no rollups are read)."""

from __future__ import annotations

from pathlib import Path

from fleet.config.sla_section import SlaSection
from fleet.history.reader import load_coverage, load_intervals
from fleet.history.recorder import HistoryRecorder
from fleet.history.states import StateInterval
from fleet.model import SlaSummary
from fleet.sla.math import HOUR_MS, SlaResult, compute_sla
from fleet.sla.period import Period, month_of, month_period


def sla_for_month(
    source: HistoryRecorder | Path, sla: SlaSection, month: str, now: float
) -> SlaResult:
    """The SLA result of ``month`` (to date, if it is the current one) as of ``now``."""
    now_ms = round(now * 1000)
    period = month_period(month, now_ms)
    coverage, intervals = _inputs(source, period)
    return compute_sla(sla, period, coverage, intervals, now_ms)


def _inputs(
    source: HistoryRecorder | Path, period: Period
) -> tuple[list[tuple[int, int]], list[StateInterval]]:
    if isinstance(source, HistoryRecorder):
        return source.sla_inputs(period.first_day, period.last_day)
    coverage = load_coverage(source, period.first_day, period.last_day)
    return coverage, load_intervals(source, period.last_day)


def sla_summary(
    history_or_data_dir: HistoryRecorder | Path, sla: SlaSection, now: float
) -> SlaSummary:
    """Month-to-date availability, coverage and credit owed as of ``now``."""
    result = sla_for_month(history_or_data_dir, sla, month_of(round(now * 1000)), now)
    availability = result.availability_pct
    return SlaSummary(
        month=result.period.month,
        availability_pct=None if availability is None else float(availability),
        slo_pct=float(sla.slo_percent),
        coverage_pct=float(result.coverage_pct),
        down_node_hours=result.down_node_ms / HOUR_MS,
        tier_credit_pct=float(result.tier_credit_pct),
        credit_owed=float(result.owed),
        currency=sla.currency,
        credit_model=sla.credit_model,
    )
