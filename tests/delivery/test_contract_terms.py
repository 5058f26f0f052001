"""[contract]'s renter identity reaches the agent's command line only as safe names;
[energy]'s grid intensity comes from one source, checked."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import ValidationError

from fleet.settings.contract_section import ContractSection, renter_agent_args
from ledger.delivery.grid import GridIntensityError, grid_intensity, read_hourly_csv
from ledger.delivery.section import EnergySection


def test_renter_identity_becomes_agent_options() -> None:
    contract = ContractSection(renter_users=("alice", "slurm"), renter_processes=("python3",))
    assert renter_agent_args(contract) == (
        "--renter-user", "alice", "--renter-user", "slurm", "--renter-process", "python3",
    )  # fmt: skip
    assert renter_agent_args(None) == ()


@pytest.mark.parametrize(
    "bad", [{"renter_users": ("a;rm -rf /",)}, {"renter_processes": ("x" * 16,)}]
)
def test_names_that_are_not_names_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ContractSection.model_validate(bad)


def test_one_intensity_source_at_most() -> None:
    with pytest.raises(ValidationError):
        EnergySection(grid_intensity_g_per_kwh=300, grid_country="DE")


def test_country_table_and_unknown_country() -> None:
    found = grid_intensity(EnergySection(grid_country="FR"))
    assert found is not None and found.at(0) == (Decimal(56), True)
    assert "Ember" in found.source and "2023" in found.source
    with pytest.raises(GridIntensityError, match="not in the shipped table"):
        grid_intensity(EnergySection(grid_country="ZZ"))


def test_hourly_file_in_electricity_maps_form(tmp_path: Path) -> None:
    path = tmp_path / "de.csv"
    path.write_text(
        "datetime,zone,carbon_intensity\n"
        "2026-02-01T00:00:00Z,DE,400\n"
        "2026-02-01T01:00:00+00:00,DE,300.5\n",
        encoding="utf-8",
    )
    found = read_hourly_csv(path)
    hour0 = 1_769_904_000_000  # 2026-02-01T00:00Z
    assert found.at(hour0) == (Decimal(400), True)
    assert found.at(hour0 + 3_600_000) == (Decimal("300.5"), True)
    assert found.at(hour0 + 7_200_000) == (Decimal("350.25"), False)  # the file's mean


@pytest.mark.parametrize(
    "body",
    ["when,zone,ci\n", "datetime,zone,carbon_intensity\nyesterday,DE,1\n",
     "datetime,zone,carbon_intensity\n2026-02-01T00:00Z,DE,nan\n"],
)  # fmt: skip
def test_a_bad_file_is_refused_with_its_line(tmp_path: Path, body: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(GridIntensityError):
        read_hourly_csv(path)
