"""[energy] facility overhead and grid carbon intensity (docs/report.md)."""

from __future__ import annotations

from fleet.settings.base import Section


class EnergySection(Section):
    """[energy] how GPU energy becomes facility energy and CO2."""
