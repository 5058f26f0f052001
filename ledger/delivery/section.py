"""[energy] facility overhead and grid carbon intensity (docs/report.md)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from fleet.settings.base import Section


class EnergySection(Section):
    """[energy] how GPU energy becomes facility energy and CO2.

    Give at most one of `grid_intensity_g_per_kwh`, `grid_intensity_csv` and
    `grid_country`; with none of them CO2 is not shown.
    """

    pue: float = Field(default=1.2, ge=1.0, le=5.0)
    """Power usage effectiveness of the facility: facility energy = GPU energy × PUE.
    The default 1.2 is a typical figure for a modern AI data centre (a judgment, not the
    provider's number: ask yours)."""
    grid_intensity_g_per_kwh: float | None = Field(default=None, ge=0, le=2000)
    """A constant grid carbon intensity, gCO2eq per kWh."""
    grid_intensity_csv: Path | None = None
    """An hourly intensity file in Electricity Maps' export form: a header with
    `datetime,zone,carbon_intensity` (UTC ISO 8601 hour, zone id, gCO2eq/kWh), one row per
    hour. Hours the file lacks use the file's mean, and the report says how many."""
    grid_country: str | None = Field(default=None, pattern=r"^[A-Z]{2}$")
    """A country code (ISO 3166-1 alpha-2) looked up in the yearly table shipped with
    gpufleet (docs/report.md names its source and year)."""

    @model_validator(mode="after")
    def _one_intensity(self) -> EnergySection:
        given = [
            self.grid_intensity_g_per_kwh is not None,
            self.grid_intensity_csv is not None,
            self.grid_country is not None,
        ]
        if sum(given) > 1:
            raise ValueError(
                "give one of grid_intensity_g_per_kwh, grid_intensity_csv, grid_country"
            )
        return self
