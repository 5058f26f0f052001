"""The root of the configuration file: one table per room, each owned by its module."""

from pydantic import Field

from fleet.config.alerts_section import AlertsSection
from fleet.config.base import Section
from fleet.config.cluster_section import ClusterSection
from fleet.config.fleet_section import FleetSection
from fleet.config.health_section import HealthSection
from fleet.config.history_section import HistorySection
from fleet.config.metrics_section import MetricsSection
from fleet.config.probes_section import ProbesSection
from fleet.config.sla_section import SlaSection
from fleet.config.ui_section import UiSection


class Config(Section):
    """A gpufleet configuration file (TOML)."""

    fleet: FleetSection = Field(default_factory=FleetSection)
    """Which nodes to watch and how to reach them."""
    health: HealthSection = Field(default_factory=HealthSection)
    """Thresholds of the health rules."""
    sla: SlaSection | None = None
    """The provider contract; without it the SLA views say the contract is not configured."""
    history: HistorySection = Field(default_factory=HistorySection)
    """Where history is recorded and how long it is kept."""
    ui: UiSection = Field(default_factory=UiSection)
    """Dashboard preferences."""
    metrics: MetricsSection = Field(default_factory=MetricsSection)
    """The Prometheus endpoint."""
    probes: ProbesSection = Field(default_factory=ProbesSection)
    """Node probes."""
    alerts: AlertsSection = Field(default_factory=AlertsSection)
    """Alerts on transitions to broken or failed: bell, webhook, command hook."""

    cluster: ClusterSection = Field(default_factory=ClusterSection)
    """Sharding and the NATS fan-in (docs/scale-out.md)."""
