"""SLA availability and credits (docs/sla.md)."""

from fleet.sla.math import Outage, SlaResult, compute_sla
from fleet.sla.period import Period, month_period
from fleet.sla.summary import sla_for_month, sla_summary

__all__ = [
    "Outage",
    "Period",
    "SlaResult",
    "compute_sla",
    "month_period",
    "sla_for_month",
    "sla_summary",
]
