"""Grid carbon intensity, gCO2eq per kWh, by UTC hour: a constant, an hourly file, or a
country's yearly figure from the table below."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ledger.delivery.section import EnergySection

HOUR_MS = 3_600_000
# A user's file is bounded: a year of hours is 8,784 rows; ten years is plenty.
MAX_CSV_ROWS = 100_000
COUNTRY_SOURCE = (
    "Ember, lifecycle carbon intensity of electricity generation, data year 2023, "
    "via Our World in Data (carbon-intensity-electricity)"
)
# gCO2eq/kWh, data year 2023 (COUNTRY_SOURCE); US 369 is also the 0.369 kg/kWh figure
# renters quote. Countries are added only as read from the source, never estimated.
COUNTRY_G_PER_KWH: dict[str, int] = {
    "AR": 354, "AT": 111, "AU": 549, "BE": 138, "BR": 98, "CA": 170, "CL": 291,
    "CN": 582, "CZ": 450, "DE": 381, "DK": 152, "FI": 79, "FR": 56, "GR": 337,
    "HU": 204, "IE": 291, "IN": 713, "NO": 30, "US": 369,
}  # fmt: skip


class GridIntensityError(ValueError):
    """The configured intensity cannot be used (unknown country, unreadable file)."""


@dataclass(frozen=True)
class GridIntensity:
    """gCO2eq/kWh for each UTC hour; ``source`` says where the figures come from."""

    source: str
    default: Decimal
    hourly: dict[int, Decimal] = field(default_factory=dict)  # hour start (ms) -> g/kWh

    def at(self, hour_ms: int) -> tuple[Decimal, bool]:
        """The intensity of the hour starting at ``hour_ms`` and whether the source had it."""
        if not self.hourly:
            return self.default, True
        found = self.hourly.get(hour_ms)
        return (self.default, False) if found is None else (found, True)


def grid_intensity(section: EnergySection) -> GridIntensity | None:
    """The intensity ``section`` configures, None when none is."""
    if section.grid_intensity_g_per_kwh is not None:
        return GridIntensity("configured constant", Decimal(str(section.grid_intensity_g_per_kwh)))
    if section.grid_country is not None:
        value = COUNTRY_G_PER_KWH.get(section.grid_country)
        if value is None:
            known = ", ".join(sorted(COUNTRY_G_PER_KWH))
            raise GridIntensityError(
                f"[energy] grid_country {section.grid_country!r} is not in the shipped table "
                f"({known}); give grid_intensity_g_per_kwh or grid_intensity_csv instead"
            )
        return GridIntensity(f"{section.grid_country}: {COUNTRY_SOURCE}", Decimal(value))
    if section.grid_intensity_csv is not None:
        return read_hourly_csv(section.grid_intensity_csv)
    return None


def read_hourly_csv(path: Path) -> GridIntensity:
    """An Electricity Maps hourly export: ``datetime,zone,carbon_intensity`` columns."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            hourly = _parse_rows(csv.DictReader(handle), path)
    except OSError as exc:
        raise GridIntensityError(f"cannot read {path}: {exc.strerror}") from exc
    if not hourly:
        raise GridIntensityError(f"{path}: no hourly rows")
    mean = sum(hourly.values(), Decimal(0)) / len(hourly)
    return GridIntensity(f"hourly file {path.name}", mean, hourly)


def _parse_rows(rows: csv.DictReader[str], path: Path) -> dict[int, Decimal]:
    header = {name.strip().lower() for name in rows.fieldnames or ()}
    if not {"datetime", "carbon_intensity"} <= header:
        raise GridIntensityError(f"{path}: expected columns datetime,zone,carbon_intensity")
    hourly: dict[int, Decimal] = {}
    for number, raw in enumerate(rows, start=2):
        if number > MAX_CSV_ROWS + 1:
            raise GridIntensityError(f"{path}: more than {MAX_CSV_ROWS} rows")
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items()}
        hourly[_hour_ms(row["datetime"], path, number)] = _intensity(
            row["carbon_intensity"], path, number
        )
    return hourly


def _hour_ms(text: str, path: Path, line: int) -> int:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise GridIntensityError(f"{path}:{line}: bad datetime {text[:40]!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # Electricity Maps exports are in UTC
    ms = int(moment.timestamp() * 1000)
    return ms - ms % HOUR_MS


def _intensity(text: str, path: Path, line: int) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise GridIntensityError(f"{path}:{line}: bad carbon_intensity {text[:40]!r}") from exc
    if not value.is_finite() or not 0 <= value <= 5000:
        raise GridIntensityError(f"{path}:{line}: carbon_intensity out of range {text[:40]!r}")
    return value
