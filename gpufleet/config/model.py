"""The root of the configuration file: one table per room, each owned by its module."""

from pydantic import Field

from campaign.section import AcceptanceSection
from cluster.section import ClusterSection
from exporter.section import MetricsSection
from fleet.settings.alerts_section import AlertsSection
from fleet.settings.base import Section
from fleet.settings.contract_section import ContractSection
from fleet.settings.fleet_section import FleetSection
from fleet.settings.health_section import HealthSection
from fleet.settings.jobs_section import JobsSection
from fleet.settings.probes_section import ProbesSection
from fleet.settings.ui_section import UiSection
from gpufleet.web.section import WebSection
from history.section import HistorySection
from ledger.delivery.section import EnergySection
from ledger.sla.section import SlaSection


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
    contract: ContractSection | None = None
    """What the provider sold per node (docs/contract.md); without it nothing is judged
    against a contract."""
    acceptance: AcceptanceSection = Field(default_factory=AcceptanceSection)
    """Thresholds of `gpufleet accept` (docs/acceptance.md)."""
    energy: EnergySection = Field(default_factory=EnergySection)
    """Facility overhead and grid carbon intensity (docs/report.md)."""
    jobs: JobsSection = Field(default_factory=JobsSection)
    """Scheduler job attribution (docs/jobs.md)."""
    web: WebSection = Field(default_factory=WebSection)
    """`gpufleet web`, the dashboard in a browser (docs/dashboard.md)."""
