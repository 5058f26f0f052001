"""[sla] the provider contract (docs/sla.md)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Literal

from pydantic import Field, field_validator, model_validator

from fleet.settings.base import Section


class SlaTier(Section):
    """One credit tier: when availability falls below ``below``, ``credit_percent`` is owed."""

    below: Decimal = Field(gt=0, le=100)
    """Availability threshold in percent; the tier applies when availability is lower."""
    credit_percent: Decimal = Field(ge=0, le=100)
    """Credit as a percentage of the month's bill."""


class MaintenanceWindow(Section):
    """A provider maintenance window: excluded from the denominator and listed in the claim."""

    start: datetime
    """Start, ISO 8601 with a zone, e.g. ``2026-09-14T02:00:00Z``."""
    end: datetime
    """End (exclusive), same form."""
    note: str = ""
    """The provider's notice, e.g. a ticket number."""

    @model_validator(mode="after")
    def _ordered_with_zone(self) -> MaintenanceWindow:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("expected times with a zone, e.g. 2026-09-14T02:00:00Z")
        if self.end <= self.start:
            raise ValueError("expected end after start")
        return self


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
    downtime: Literal["broken-node", "reachability"] = "broken-node"
    """What counts as down: ``broken-node`` (a node without its healthy GPUs, or
    unreachable) or ``reachability`` (only loss of connectivity, as public SLAs say)."""
    unit: Literal["node", "gpu"] = "node"
    """Availability in node-hours, or in GPU-hours (a broken node loses only its
    unhealthy GPUs)."""
    scope: Literal["fleet", "instance"] = "fleet"
    """``fleet``: one availability for all committed nodes; ``instance``: each node is
    judged alone and credited a tier of its own bill (public per-VM SLAs)."""
    merge_outages_within_seconds: float = Field(default=0.0, ge=0)
    """Outages of one node separated by a recovery this short (or shorter) are one
    outage, judged whole against ``grace_minutes``: a link that flaps every 20 minutes
    is then one long outage, not many forgiven short ones. Only the down time inside
    it counts as down; the recoveries stay up. 0 joins nothing."""
    min_downtime_minutes: float = Field(default=0.0, ge=0)
    """A "Downtime Period" in the provider's words: down time counts only in runs of at
    least this many consecutive minutes (e.g. 1 or 5)."""
    min_coverage_for_money: float = Field(default=86_400.0, ge=0)
    """Seconds of monitored time before the claim shows money: below it every surface
    reads "insufficient coverage" and the figure appears only as a labelled projection
    (default one day: minutes of history say nothing about a month)."""
    credit_cap_percent: Decimal | None = Field(default=None, ge=0, le=100)
    """The credit never exceeds this share of the bill (e.g. 50)."""
    claim_window_days: int | None = Field(default=None, ge=1)
    """Days after the end of the month to file the claim; the report states the last day."""
    maintenance: tuple[MaintenanceWindow, ...] = ()
    """Provider maintenance windows (excluded from the denominator, listed)."""
    disputed_threshold_percent: Decimal = Field(default=Decimal(50), gt=0, le=100)
    """When at least this share of the fleet's nodes is unreachable at once (and no
    witness fails), those outages are ``disputed``: maybe the provider, maybe the path
    from the controller."""
    disputed_counts_as_down: bool = False
    """Whether disputed time counts as down (by default it is listed for you to decide)."""
    witness: tuple[str, ...] = ()
    """``host:port`` addresses the controller also checks (TCP); when they are unreachable
    too, a loss of the fleet is the monitor's network, recorded as unmonitored."""
    account_id: str = ""
    """Account, project or subscription ID printed in the claim's header."""
    contract_id: str = ""
    """Contract or order reference printed in the claim's header."""
    claim_subject: str = "SLA Credit Request"
    """The subject line the provider asks for."""
    resource_ids: dict[str, str] = Field(default_factory=dict)
    """Provider resource (instance, VM) ID per node name, printed beside each outage."""

    @field_validator("currency")
    @classmethod
    def _currency_is_named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("expected a currency code such as 'USD'")
        return value.strip()

    @field_validator("witness")
    @classmethod
    def _witness_is_host_port(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            host, _, port = item.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"expected host:port, got {item!r}")
        return value
