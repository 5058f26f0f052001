"""[probes] node probes (docs/probes.md)."""

from fleet.config.base import Section


class ProbesSection(Section):
    """[probes] node probes (docs/probes.md)."""
