"""[health] thresholds of the health rules (docs/health.md)."""

from fleet.config.base import Section


class HealthSection(Section):
    """[health] thresholds of the health rules (docs/health.md)."""
