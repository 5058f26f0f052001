"""The repairs ledger of a period: records, breaches, lemons, rates and the forecast.

Computed from the stopped history alone (no clock, no live state), so two computations
of the same directory and period give the same value.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from fleet.settings.contract_section import ContractSection
from history.reader import HistoryReader
from ledger.repairs.evidence import Evidence, read_evidence
from ledger.repairs.forecast import JobForecast, forecast
from ledger.repairs.lemons import lemons
from ledger.repairs.model import Breach, Lemon, RepairRecord
from ledger.repairs.rates import Exposure, Rate, exposure, mtbf_hours, per_node_hour, rates
from ledger.repairs.records import repair_records
from ledger.repairs.terms import breaches

# The job shapes the page forecasts: a node, a rack-sized and a large job, for a day.
FORECAST_NODES = (1, 16, 128, 1024)
FORECAST_HOURS = 24.0


@dataclass(frozen=True, slots=True)
class RepairsLedger:
    """Everything the repairs section shows."""

    start_ms: int
    end_ms: int
    records: tuple[RepairRecord, ...]
    breaches: tuple[Breach, ...]
    lemons: tuple[Lemon, ...]
    exposure: Exposure
    rates: tuple[Rate, ...]
    mtbf_hours: dict[str, float | None]
    forecasts: tuple[JobForecast, ...]


def _ms(t: datetime) -> int:
    return round(t.timestamp() * 1000)


def compute(
    data_dir: Path,
    start: datetime,
    end: datetime,
    contract: ContractSection | None,
    reader: HistoryReader | None = None,
) -> RepairsLedger:
    """The ledger of outages detected in ``[start, end)``.

    With a report's ``reader``, events are read for the report's own days, so the
    ledger reads nothing the report did not; alone, from a day before the period, so an
    outage detected at its start still has its cause.
    """
    start_ms, end_ms = _ms(start), _ms(end)
    first = start.date() if reader is not None else (start - timedelta(days=1)).date()
    last = (end - timedelta(milliseconds=1)).date()  # the period's last day: end is exclusive
    evidence = read_evidence(data_dir, first, last, end_ms, reader)
    return from_evidence(evidence, start_ms, contract)


def from_evidence(
    evidence: Evidence, start_ms: int, contract: ContractSection | None
) -> RepairsLedger:
    """The ledger of ``evidence`` for outages detected at or after ``start_ms``."""
    end_ms = evidence.end_ms
    records = tuple(r for r in repair_records(evidence) if start_ms <= r.detected_ms < end_ms)
    gpus = contract.gpus_per_node if contract is not None else 8
    seen = exposure(evidence.intervals, start_ms, end_ms, gpus)
    rate = per_node_hour(records, seen)
    return RepairsLedger(
        start_ms=start_ms,
        end_ms=end_ms,
        records=records,
        breaches=tuple(breaches(records, contract, end_ms)),
        lemons=tuple(lemons(records, evidence.events)),
        exposure=seen,
        rates=tuple(rates(records, seen)),
        mtbf_hours=mtbf_hours(records, seen),
        forecasts=tuple(
            forecast(rate, n, FORECAST_HOURS, gpus_per_node=gpus) for n in FORECAST_NODES
        ),
    )
