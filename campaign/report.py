"""The campaign's report as data: one JSON document the md, html and JUnit forms render.

Schema ``gpufleet.acceptance/1`` is documented in docs/acceptance.md ("The report").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from decimal import Decimal
from typing import Any

from campaign.model import CampaignState, FabricStep
from campaign.section import AcceptanceSection
from fleet.settings.contract_section import ContractSection

SCHEMA = "gpufleet.acceptance/1"
EXIT_ACCEPTED, EXIT_REJECTED, EXIT_COULD_NOT_RUN = 0, 1, 2


def report_dict(
    state: CampaignState, settings: AcceptanceSection, contract: ContractSection
) -> dict[str, Any]:
    """The report as JSON-able data (see docs/acceptance.md for every key)."""
    nodes = [_node_row(state, name) for name in state.nodes]
    accepted = sum(1 for n in nodes if n["status"] == "accepted")
    rejected = sum(1 for n in nodes if n["status"] == "rejected")
    causes = Counter(items[0].cause for items in state.rejected.values() if items)
    return {
        "schema": SCHEMA,
        "started_at": state.started_at,
        "finished_at": state.finished_at,
        "complete": state.finished_at is not None,
        "nodes": nodes,
        "summary": {
            "nodes": len(nodes),
            "accepted": accepted,
            "rejected": rejected,
            "pending": len(nodes) - accepted - rejected,
            "accepted_percent": round(100.0 * accepted / len(nodes), 2) if nodes else 0.0,
            "failures_by_cause": dict(sorted(causes.items())),
        },
        "fabric": {
            "denominator": state.denominator,
            "denominator_gbps": state.denominator_gbps,
            "fraction": settings.fabric_fraction,
            "steps": [_step_row(s) for s in state.steps],
            "scaling": scaling(state.steps),
        },
        "soak": {
            "planned_s": state.soak_s,
            "monitored_s": state.soak_done_s,
            "gaps": [
                {"from": t.started_at, "to": t.ended_at, "note": t.note}
                for t in state.timeline
                if t.what == "gap"
            ],
        },
        "tflops_per_gpu": state.tflops_per_gpu,
        "contract": {
            "gpus_per_node": contract.gpus_per_node,
            "gpu_hour_price": str(contract.gpu_hour_price)
            if contract.gpu_hour_price is not None
            else None,
            "currency": contract.currency,
        },
        "timeline": [asdict(t) for t in state.timeline],
    }


def exit_status(report: dict[str, Any]) -> int:
    """0 every node accepted, 1 some rejected, 2 the campaign could not judge them."""
    summary = report["summary"]
    if not report["complete"] or summary["nodes"] == 0:
        return EXIT_COULD_NOT_RUN
    return EXIT_REJECTED if summary["rejected"] else EXIT_ACCEPTED


def scaling(steps: tuple[FabricStep, ...]) -> list[dict[str, Any]]:
    """Best healthy ladder figure per node count: the bus bandwidth against node count."""
    best: dict[int, float] = {}
    for step in steps:
        if step.purpose == "ladder" and step.status == "ok" and step.busbw_gbps is not None:
            count = len(step.nodes)
            best[count] = max(best.get(count, 0.0), step.busbw_gbps)
    return [{"nodes": k, "busbw_gbps": v} for k, v in sorted(best.items())]


def usd_per_kilo_tflops_hour(price: Decimal | None, tflops_per_gpu: float | None) -> Decimal | None:
    """Price of 1,000 TFLOPS-hours: GPU-hour price * 1,000 / measured TFLOPS per GPU.

    E.g. USD 2.50 per GPU-hour at 400 TFLOPS: 2.50 * 1000 / 400 = USD 6.25.
    """
    if price is None or not tflops_per_gpu or tflops_per_gpu <= 0:
        return None
    figure = Decimal(str(tflops_per_gpu))
    return (price * 1000 / figure).quantize(Decimal("0.01"))


def _node_row(state: CampaignState, name: str) -> dict[str, Any]:
    evidence = state.rejected.get(name, ())
    if evidence:
        status = "rejected"
    elif state.finished_at is not None:
        status = "accepted"
    else:
        status = "pending"
    return {
        "name": name,
        "status": status,
        "stage": evidence[0].stage if evidence else None,
        "evidence": [asdict(e) for e in evidence],
    }


def _step_row(step: FabricStep) -> dict[str, Any]:
    row = asdict(step)
    row["nodes"] = list(step.nodes)
    return row
