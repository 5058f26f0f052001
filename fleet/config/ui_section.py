"""[ui] dashboard preferences."""

from fleet.config.base import Section


class UiSection(Section):
    """[ui] dashboard preferences."""
