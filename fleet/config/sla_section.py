"""[sla] the provider contract (docs/sla.md)."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import Field, field_validator

from fleet.config.base import Section


class SlaTier(Section):
    """One credit tier: when availability falls below ``below``, ``credit_percent`` is owed."""

    below: Decimal = Field(gt=0, le=100)
    """Availability threshold in percent; the tier applies when availability is lower."""
    credit_percent: Decimal = Field(ge=0, le=100)
    """Credit as a percentage of the month's bill."""


class SlaSection(Section):
    """[sla] the provider contract (docs/sla.md)."""

    committed_nodes: int = Field(ge=1)
    """Nodes the provider committed to keep up; slots with no working node count as down."""
    gpus_per_node: int = Field(default=8, ge=1)
    """GPUs per committed node (prices are per GPU-hour)."""
    gpu_hour_price: Decimal = Field(default=Decimal(0), ge=0)
    """Price of one GPU-hour in ``currency``."""
    currency: str = "USD"
    """Currency of ``gpu_hour_price`` and of every credit."""
    slo_percent: Decimal = Field(default=Decimal("99.5"), gt=0, le=100)
    """Availability the provider promised, in percent (shown beside the measured figure)."""
    grace_minutes: float = Field(default=0.0, ge=0)
    """Outages shorter than this are forgiven whole; longer ones count whole."""
    unreachable_counts_as_down: bool = True
    """Whether an unreachable node counts as down (otherwise only broken nodes do)."""
    credit_model: Literal["tiered", "pro_rata"] = "tiered"
    """Which credit is owed: the tier's share of the bill, or the lost GPU-hours at the price."""
    tiers: tuple[SlaTier, ...] = ()
    """Credit tiers, e.g. ``[{below = 99.5, credit_percent = 10}]``; the largest
    ``credit_percent`` among tiers whose ``below`` exceeds the availability applies."""

    @field_validator("currency")
    @classmethod
    def _currency_is_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("expected a currency code such as 'USD'")
        return value.strip()
