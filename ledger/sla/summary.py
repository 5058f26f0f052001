"""Month-to-date SLA figures for the dashboard header (cheap: no rollups are read)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from fleet.model import SlaSummary
from history.ledger import LedgerInputs, load_ledger, read_ledger
from history.reader import HistoryReader
from history.recorder import HistoryRecorder
from ledger.sla.assess import compute_sla
from ledger.sla.claim_words import (
    PANEL_AVAILABILITY_DIGITS,
    downtime_text,
    money_withheld,
    panel_money,
    panel_notes,
)
from ledger.sla.math import HOUR_MS, SlaResult
from ledger.sla.period import Period, month_of, month_period
from ledger.sla.section import SlaSection

# What the ledger reads: a live recorder, a data directory (or its reader, whose reads
# a report shares), or inputs put together elsewhere (an attached view's, from every
# shard's ledger).
LedgerSource = HistoryRecorder | HistoryReader | Path | LedgerInputs


def sla_for_month(source: LedgerSource, sla: SlaSection, month: str, now: float) -> SlaResult:
    """The SLA result of ``month`` (to date, if it is the current one) as of ``now``.

    A month to date of a stopped history ends where observation ended, not now: the
    report of a stopped history is the same whenever it is run.
    """
    period, inputs, as_of = ledger_for_month(source, month, now)
    return compute_sla(sla, period, inputs, now_ms=as_of)


def ledger_for_month(
    source: LedgerSource, month: str, now: float
) -> tuple[Period, LedgerInputs, int]:
    """The period judged, the history's inputs for it, and the time they hold as of (ms)."""
    now_ms = round(now * 1000)
    period = month_period(month, now_ms)
    inputs = _inputs(source, period.first_day, period.last_day, now)
    as_of = inputs.open_end_ms(now_ms)
    month_to_date = period.end_ms < period.month_end_ms
    if month_to_date and period.start_ms < as_of < period.end_ms:
        period = month_period(month, as_of)
    return period, inputs, as_of


def _inputs(source: LedgerSource, first: date, last: date, now: float) -> LedgerInputs:
    if isinstance(source, LedgerInputs):
        return source
    if isinstance(source, HistoryRecorder):
        return source.sla_inputs(first, last, now)
    if isinstance(source, HistoryReader):
        return read_ledger(source, first, last, now)
    return load_ledger(source, first, last, now)


def provisional_words(summary: SlaSummary) -> str:
    """How a month-to-date figure must be read (see ``SlaSummary.reading``)."""
    return summary.reading


def sla_summary(history_or_data_dir: LedgerSource, sla: SlaSection, now: float) -> SlaSummary:
    """Month-to-date availability, coverage and credit owed as of ``now``."""
    result = sla_for_month(history_or_data_dir, sla, month_of(round(now * 1000)), now)
    availability = result.availability_pct
    fields = {
        "month": result.period.month,
        "availability_pct": None if availability is None else float(availability),
        "slo_pct": float(sla.slo_percent),
        "coverage_pct": float(result.coverage_pct),
        "down_node_hours": result.down_node_ms / HOUR_MS / result.weight,
        "tier_credit_pct": float(result.tier_credit_pct),
        "credit_owed": float(result.owed),
        "currency": sla.currency,
        "credit_model": sla.credit_model,
        **panel_texts(result, sla),
    }
    known = SlaSummary.__dataclass_fields__  # the panel's words, once the model has them
    return SlaSummary(**{k: v for k, v in fields.items() if k in known})  # type: ignore[arg-type]


def panel_texts(result: SlaResult, sla: SlaSection) -> dict[str, object]:
    """What the SLA panel prints, worded here so it never says more than the claim:
    ``money_text`` (the amount, or "insufficient coverage" and a labelled projection),
    ``money_withheld`` (the reason, or None), ``down_text`` (node-hours at the precision
    of the availability beside it) and ``notes`` (unseen slots, a contract that cannot
    credit)."""
    amount = f"{result.owed:,.2f} {sla.currency}"
    return {
        "money_text": panel_money(result, sla, amount),
        "money_withheld": money_withheld(result, sla),
        "down_text": downtime_text(result, PANEL_AVAILABILITY_DIGITS),
        "notes": panel_notes(result, sla),
    }
