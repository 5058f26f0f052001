"""The SLA panel prints the ledger's own words: a withheld claim is a labelled
projection, downtime at the availability's precision, and the ledger's notes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from textual.widgets import Static

from testkit.snapshots import demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import wait_for
from tui.app import GpuFleetApp

MakeApp = Callable[..., GpuFleetApp]


def panel_text(app: GpuFleetApp) -> str:
    return str(app.main.query_one("#sla", Static).render())


async def test_withheld_money_is_a_projection_never_a_bare_amount(make_app: MakeApp) -> None:
    snap = demo_snapshot(4)
    assert snap.sla is not None
    sla = replace(
        snap.sla,
        credit_model="tiered",
        credit_owed=115_200.0,
        money_text="insufficient coverage (projection, not a claim: 115,200.00 USD)",
        money_withheld="insufficient coverage: 6 min monitored, 1 day needed",
        down_text="0.134 node-hours",
        notes=("16 committed slots never seen",),
    )
    app = make_app(StaticFleet([replace(snap, sla=sla)]))
    async with app.run_test(size=(180, 50)) as pilot:
        await wait_for(pilot, lambda: "insufficient coverage" in panel_text(app))
        text = panel_text(app)
        assert "projection, not a claim: 115,200.00 USD)" in text
        # The amount appears only inside the projection's words, never on its own.
        assert text.count("115,200.00 USD") == 1
        assert "at month end if it stays here" not in text and "owed so far" not in text
        assert "Downtime 0.134 node-hours" in text
        assert "16 committed slots never seen" in text


async def test_a_summary_without_the_ledger_words_reads_as_before(make_app: MakeApp) -> None:
    snap = demo_snapshot(4)
    app = make_app(StaticFleet([snap]))
    async with app.run_test(size=(180, 50)) as pilot:
        await wait_for(pilot, lambda: "Downtime" in panel_text(app))
        text = panel_text(app)
        assert "4,312.80 USD" in text and "node-hours" in text
