"""[acceptance] thresholds of the acceptance campaign (docs/acceptance.md)."""

from __future__ import annotations

from fleet.settings.base import Section


class AcceptanceSection(Section):
    """[acceptance] how a campaign judges each stage; defaults name their source."""
