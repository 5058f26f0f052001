"""[sla] the provider contract (docs/sla.md)."""

from fleet.config.base import Section


class SlaSection(Section):
    """[sla] the provider contract (docs/sla.md)."""
