"""The [acceptance] defaults documented in docs/acceptance.md are the code's defaults."""

from __future__ import annotations

from pathlib import Path

from campaign.section import AcceptanceSection

DOC = Path(__file__).resolve().parents[2] / "docs" / "acceptance.md"


def documented_defaults() -> dict[str, str]:
    """Key to default text, from the doc's thresholds table."""
    rows: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def test_every_field_is_documented_with_its_default() -> None:
    section = AcceptanceSection()
    documented = documented_defaults()
    assert set(documented) == set(AcceptanceSection.model_fields)
    for key, text in documented.items():
        value = getattr(section, key)
        shown = str(value) if isinstance(value, str) else repr(float(value))
        assert text == shown, key


def test_every_field_names_its_source() -> None:
    for key, field in AcceptanceSection.model_fields.items():
        assert field.description and "Source" in field.description, key


def test_the_published_figures() -> None:
    section = AcceptanceSection()
    assert (section.node_allreduce_h100_gbps, section.node_allreduce_h200_gbps) == (460, 431)
    assert section.ib_gpudirect_gbps == 380
    assert section.fabric_fraction == 0.8
