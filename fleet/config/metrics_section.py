"""[metrics] the Prometheus endpoint (docs/metrics.md)."""

from fleet.config.base import Section


class MetricsSection(Section):
    """[metrics] the Prometheus endpoint (docs/metrics.md)."""
