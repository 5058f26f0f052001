"""[fleet] which nodes to watch and how to reach them."""

from fleet.config.base import Section


class FleetSection(Section):
    """[fleet] which nodes to watch and how to reach them."""
