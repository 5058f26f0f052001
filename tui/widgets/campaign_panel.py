"""The dashboard's acceptance campaign panel: stage, nodes passed/failed/pending, the
fabric ladder so far and the soak's events. It draws the campaign report's JSON form
(docs/acceptance.md, "The report"), which the facade hands over; node text (names,
evidence) is escaped before it reaches markup."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape
from textual.reactive import reactive
from textual.widgets import Static

NO_CAMPAIGN = "No acceptance campaign running."
STAGES = ("inventory", "health", "probes", "fabric", "soak")
LADDER_LINES = 6  # the newest steps; the report holds them all
SOAK_EVENTS = 5


def current_stage(report: Mapping[str, Any]) -> str:
    """The stage running now: the first not in the timeline, or ``done``."""
    if report.get("complete"):
        return "done"
    finished = {t["what"] for t in report.get("timeline", ()) if t.get("ended_at") is not None}
    return next((s for s in STAGES if s not in finished), "done")


def campaign_markup(report: Mapping[str, Any] | None) -> str:
    """Markup of the panel for one report document (None: no campaign)."""
    if not report:
        return NO_CAMPAIGN
    s = report["summary"]
    lines = [
        f"Stage: {current_stage(report)}   accepted {s['accepted']}  rejected {s['rejected']}"
        f"  pending {s['pending']}  of {s['nodes']}",
    ]
    steps = report["fabric"]["steps"][-LADDER_LINES:]
    for step in steps:
        figure = step["busbw_gbps"]
        shown = "-" if figure is None else f"{figure:.3g} GB/s"
        lines.append(
            f"  {step['purpose']:<6} {len(step['nodes']):>3} nodes  {step['status']:<6} {shown}"
        )
    soak_events = [
        (node["name"], e)
        for node in report["nodes"]
        for e in node["evidence"]
        if e["stage"] == "soak"
    ][-SOAK_EVENTS:]
    for name, evidence in soak_events:
        lines.append(f"  soak: {escape(name)}: {escape(evidence['message'])}")
    return "\n".join(lines)


class CampaignPanel(Static):
    """The panel; the screen assigns a new report document (never mutates one)."""

    report: reactive[Mapping[str, Any] | None] = reactive(None)

    def watch_report(self) -> None:
        report = self.report
        rejected = report is not None and report["summary"]["rejected"] > 0
        self.set_class(rejected, "-rejected")
        self.update(campaign_markup(report))
