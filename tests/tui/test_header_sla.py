"""The SLA tile says how little of the month a month-to-date figure rests on."""

from __future__ import annotations

from fleet.model import FleetSnapshot, SlaSummary
from tui.header_view import header_tiles


def _sla(withheld: str | None) -> SlaSummary:
    return SlaSummary(
        month="2026-11", availability_pct=100.0, slo_pct=99.5, coverage_pct=0.04,
        down_node_hours=0.0, tier_credit_pct=0.0, credit_owed=0.0, currency="USD",
        credit_model="tiers", money_withheld=withheld,
    )  # fmt: skip


def test_an_early_figure_shows_its_coverage_beside_it() -> None:
    early = header_tiles(FleetSnapshot(0.0, (), sla=_sla("insufficient coverage: 1 min")))
    assert "100.000" in early.sla and "coverage 0.0 %" in early.sla
    assert early.sla.count("\n") == 1  # the tile has two lines


def test_a_figure_with_enough_coverage_shows_the_slo_alone() -> None:
    enough = header_tiles(FleetSnapshot(0.0, (), sla=_sla(None)))
    assert "SLO" in enough.sla and "coverage" not in enough.sla
