"""SLA availability and credits (docs/sla.md)."""

from ledger.sla.assess import compute_sla
from ledger.sla.math import Outage, SlaResult
from ledger.sla.period import Period, month_period
from ledger.sla.summary import sla_for_month, sla_summary

__all__ = [
    "Outage",
    "Period",
    "SlaResult",
    "compute_sla",
    "month_period",
    "sla_for_month",
    "sla_summary",
]
