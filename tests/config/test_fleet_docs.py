"""docs/config.md documents every [fleet] key, with the default the code has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleet.settings.fleet_section import FleetSection, HostOverride

DOCS = Path(__file__).resolve().parents[2] / "docs" / "config.md"


def _rows() -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([a-z_]+)` \|(.*)\|$", line)
        if match:
            rows.setdefault(match.group(1), [c.strip() for c in match.group(2).split("|")])
    return rows


@pytest.mark.parametrize("model", [FleetSection, HostOverride])
def test_every_key_has_a_row(model: type[FleetSection] | type[HostOverride]) -> None:
    rows = _rows()
    assert set(model.model_fields) <= set(rows)


@pytest.mark.parametrize("name", sorted(FleetSection.model_fields))
def test_defaults_match_the_code(name: str) -> None:
    field = FleetSection.model_fields[name]
    default = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
    shown = _rows()[name][0]
    if default is None:
        assert shown == "unset"
    else:
        assert shown.strip("`") == (f'"{default}"' if isinstance(default, str) else str(default))
