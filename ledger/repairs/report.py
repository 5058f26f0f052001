"""The repairs section of ``gpufleet report``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.repairs.ledger import RepairsLedger, compute
from ledger.repairs.render import ledger_json, ledger_markdown
from ledger.report_section import ReportPeriod, ReportSection


@dataclass(frozen=True, slots=True)
class RepairsSection:
    """Repairs, breaches, lemons, failure rates and the job forecast of a period."""

    ledger: RepairsLedger

    @property
    def key(self) -> str:
        return "repairs"

    @property
    def title(self) -> str:
        return "Repairs and reliability"

    def to_json(self) -> dict[str, Any]:
        return ledger_json(self.ledger)

    def markdown(self) -> str:
        return ledger_markdown(self.ledger)


def repairs_section(period: ReportPeriod) -> ReportSection:
    """The repairs section of ``period`` (called by the report's assembly)."""
    return RepairsSection(compute(period.data_dir, period.start, period.end, period.contract))
