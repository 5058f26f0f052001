"""The repairs ledger as JSON-ready values and as Markdown."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ledger.repairs.forecast import JobForecast
from ledger.repairs.ledger import RepairsLedger
from ledger.repairs.model import RepairRecord

MODEL = (
    "Model: nodes fail independently at the fleet's measured rate per node-hour "
    "(exponential times between failures); any node's failure interrupts the job. "
    "P(no interruption) = exp(-N·rate·H); MTBF_job = 1/(N·rate); checkpoint interval "
    "(Young/Daly) = sqrt(2 × cost × MTBF_job); GPU-hours lost per failure = "
    "N × GPUs per node × (interval/2 + restart). Limits are exact Poisson (Garwood), 95 %."
)


def iso(ms: int | None) -> str | None:
    """UTC ISO 8601 of ``ms`` (None stays None)."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def _s(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def record_json(r: RepairRecord) -> dict[str, Any]:
    """One repair record (times in ISO, durations in seconds)."""
    first = r.first_action
    return {
        "node": r.node,
        "detected": iso(r.detected_ms),
        "acknowledged": iso(r.ack.at_ms) if r.ack else None,
        "ticket": r.ack.ticket if r.ack else None,
        "first_action": None if first is None else {"kind": first.kind, "at": iso(first.at_ms)},
        "resolved": iso(r.resolved_ms),
        "kind": r.kind,
        "failure_class": r.failure_class,
        "gpus": list(r.gpus),
        "hardware": list(r.serials),
        "reasons": list(r.reasons),
        "time_to_ack_s": _s(r.time_to_ack_ms),
        "time_to_action_s": _s(r.time_to_action_ms),
        "time_to_repair_s": _s(r.time_to_repair_ms),
        "unmonitored_s": r.unmonitored_ms / 1000,
        "actions": [
            {"kind": a.kind, "at": iso(a.at_ms), "gpu": a.gpu, "detail": a.detail}
            for a in r.actions
        ],
    }


def _forecast_json(f: JobForecast) -> dict[str, Any]:
    return {
        "nodes": f.nodes,
        "hours": f.hours,
        "p_no_interruption": f.p_no_interruption,
        "mtbf_job_h": f.mtbf_job_h,
        "checkpoint_cost_h": f.checkpoint_cost_h,
        "checkpoint_interval_h": f.checkpoint_interval_h,
        "gpu_hours_lost_per_failure": f.gpu_hours_lost_per_failure,
    }


def ledger_json(led: RepairsLedger) -> dict[str, Any]:
    """The whole ledger, JSON-ready."""
    return {
        "observed": {
            "start": iso(led.start_ms),
            "end": iso(led.end_ms),
            "node_days": led.exposure.node_days,
            "gpu_days": led.exposure.gpu_days,
        },
        "repairs": [record_json(r) for r in led.records],
        "breaches": [
            {
                "node": b.node,
                "detected": iso(b.detected_ms),
                "clock_from": b.clock_from,
                "took_s": b.took_ms / 1000,
                "allowed_s": b.allowed_ms / 1000,
                "why": b.why,
            }
            for b in led.breaches
        ],
        "lemons": [
            {
                "hardware": lemon.serial,
                "moved": lemon.moved,
                "chain": [{"node": n, "detected": iso(t), "gpu": g} for n, t, g in lemon.failures],
            }
            for lemon in led.lemons
        ],
        "rates": [
            {
                "class": r.failure_class,
                "failures": r.failures,
                "per_node_day": r.per_node_day,
                "per_node_day_95": list(r.node_day_limits),
                "per_gpu_day": r.per_gpu_day,
                "per_gpu_day_95": list(r.gpu_day_limits),
            }
            for r in led.rates
        ],
        "mtbf_hours": led.mtbf_hours,
        "model": MODEL,
        "forecast": [_forecast_json(f) for f in led.forecasts],
    }


def _h(ms: int | None) -> str:
    return "—" if ms is None else f"{ms / 3_600_000:.2f} h"


def ledger_markdown(led: RepairsLedger) -> str:
    """The ledger as Markdown: repairs, breaches, lemons, rates, forecast and its model."""
    seen = led.exposure
    lines = [
        f"Observed {iso(led.start_ms)} to {iso(led.end_ms)}: {seen.node_days:.2f} node-days, "
        f"{seen.gpu_days:.2f} GPU-days.",
        "",
        "| node | detected | kind | class | to ack | ticket | to first action | to repair |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rec in led.records:
        ticket = (rec.ack.ticket or "(none)") if rec.ack else "—"
        lines.append(
            f"| {rec.node} | {iso(rec.detected_ms)} | {rec.kind} | {rec.failure_class} | "
            f"{_h(rec.time_to_ack_ms)} | {ticket} | {_h(rec.time_to_action_ms)} | "
            f"{_h(rec.time_to_repair_ms)} |"
        )
    lines += ["", f"Contract breaches: {len(led.breaches)}"]
    lines += [f"- {b.node} detected {iso(b.detected_ms)}: {b.why}" for b in led.breaches]
    lines += ["", f"Repeat offenders: {len(led.lemons)}"]
    for lemon in led.lemons:
        chain = " → ".join(f"{n} GPU {g} at {iso(t)}" for n, t, g in lemon.failures)
        lines.append(f"- {lemon.serial}{' (moved node)' if lemon.moved else ''}: {chain}")
    lines += [
        "",
        "| class | failures | per node-day (95 %) | per GPU-day (95 %) |",
        "|---|---|---|---|",
    ]
    for r in led.rates:
        lo, hi = r.node_day_limits
        glo, ghi = r.gpu_day_limits
        lines.append(
            f"| {r.failure_class} | {r.failures} | {r.per_node_day:.4g} ({lo:.4g}–{hi:.4g}) | "
            f"{r.per_gpu_day:.4g} ({glo:.4g}–{ghi:.4g}) |"
        )
    lines += [
        "",
        MODEL,
        "",
        "| nodes | hours | P(no interruption) | MTBF job | checkpoint every | GPU-h lost/failure |",
        "|---|---|---|---|---|---|",
    ]
    for f in led.forecasts:
        mtbf = "—" if f.mtbf_job_h is None else f"{f.mtbf_job_h:.2f} h"
        tau = "—" if f.checkpoint_interval_h is None else f"{f.checkpoint_interval_h:.2f} h"
        lost = (
            "—" if f.gpu_hours_lost_per_failure is None else f"{f.gpu_hours_lost_per_failure:.1f}"
        )
        lines.append(
            f"| {f.nodes} | {f.hours:g} | {f.p_no_interruption:.4f} | {mtbf} | {tau} | {lost} |"
        )
    return "\n".join(lines) + "\n"
