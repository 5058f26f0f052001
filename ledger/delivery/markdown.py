"""The delivery section's Markdown, drawn from its JSON form so both always agree."""

from __future__ import annotations

import re
from typing import Any

from ledger.delivery.classes import CLASSES

_SPECIAL = re.compile(r"([\\`*_\[\]<>|#!~])")


def cell(value: Any) -> str:
    """A value as one Markdown table cell: specials escaped, line breaks flattened."""
    text = "n/a" if value is None else str(value)
    return _SPECIAL.sub(r"\\\1", " ".join(text.split()))[:200]


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table, or "None." without rows."""
    if not rows:
        return "None.\n"
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _money(data: dict[str, Any], amount: str | None) -> str:
    return "n/a" if amount is None else f"{amount} {data['currency']}"


def delivery_markdown(data: dict[str, Any]) -> str:
    """The whole section body."""
    parts = [
        _summary(data),
        "### GPU-hours by class\n\n" + _classes(data),
        "### Most idle nodes\n\n" + _most_idle(data),
        "### Deviations from the contract\n\n" + _deviations(data),
        "### Energy and CO2\n\n" + _energy(data),
        "### Cost of delivered TF32 compute\n\n" + _throughput(data),
        "### Per node (GPU-hours)\n\n" + _per_node(data),
    ]
    return "\n".join(parts)


def _summary(data: dict[str, Any]) -> str:
    rows = [
        ["Period", f"{data['start']} to {data['end']}"],
        ["Nodes", data["nodes"]],
        ["Paid GPU-hours", data["paid_gpu_hours"]],
        ["Paid", _money(data, data["paid_cost"])],
        ["Delivered healthy GPU-hours", data["delivered_healthy_gpu_hours"]],
        ["Idle cost", _money(data, data["classes"]["idle"]["cost"])],
        ["Deviation credit", _money(data, data["deviation_credit"])],
    ]
    return table(["", ""], rows)


def _classes(data: dict[str, Any]) -> str:
    rows = [
        [c, data["classes"][c]["gpu_hours"], _money(data, data["classes"][c]["cost"])]
        for c in CLASSES
    ]
    return table(["Class", "GPU-hours", "Cost"], rows)


def _most_idle(data: dict[str, Any]) -> str:
    rows = [
        [r["node"], r["idle_gpu_hours"], r["idle_share"], _money(data, r["idle_cost"])]
        for r in data["most_idle"]
    ]
    return table(["Node", "Idle GPU-hours", "Idle share", "Idle cost"], rows)


def _deviations(data: dict[str, Any]) -> str:
    rows = [
        [d["node"], _where(d), d["kind"], d["start"], d["end"], d["gpu_hours"],
         d["measured"], d["contracted"], _money(data, d["credit"])]
        for d in data["deviations"]
    ]  # fmt: skip
    header = ["Node", "Where", "Kind", "Start", "End", "GPU-hours", "Measured", "Contracted"]
    return table([*header, "Credit"], rows)


def _where(d: dict[str, Any]) -> str:
    if d["gpu"] is not None:
        return f"GPU {d['gpu']}"
    return "node" if d["port"] is None else f"port {d['port']}"


def _energy(data: dict[str, Any]) -> str:
    e = data["energy"]
    rows = [
        ["GPU energy, kWh", e["gpu_kwh"]],
        ["PUE", e["pue"]],
        ["Facility energy, kWh", e["facility_kwh"]],
        ["CO2, kg", e["co2_kg"]],
        ["Grid intensity from", e["intensity_source"]],
        ["Hours the intensity source lacked (its mean used)", e["intensity_missing_hours"]],
        ["GPU-minutes from the energy counter", e["minutes_from_counter"]],
        ["GPU-minutes integrated from power (no counter, reset or gap)", e["minutes_from_power"]],
        ["GPU-minutes with neither", e["minutes_unknown"]],
    ]
    split = e["by_class"]
    by_class = [
        [c, split[c]["gpu_kwh"], split[c]["facility_kwh"], split[c]["co2_kg"]] for c in CLASSES
    ]
    header = ["Class", "GPU kWh", "Facility kWh", "CO2, kg"]
    return table(["", ""], rows) + "\n" + table(header, by_class)


def _throughput(data: dict[str, Any]) -> str:
    t = data["throughput"]
    rows = [[c, t["tflops_hours"][c], t["g_co2_per_tflops_hour"][c]] for c in CLASSES]
    out = table(["Class", "TF32 TFLOPS-hours", "gCO2 per TFLOPS-hour"], rows) + "\n"
    out += table(
        ["", ""],
        [
            ["Per 1,000 TFLOPS-hour paid", _money(data, t["cost_per_1000_tflops_hour_paid"])],
            ["Per 1,000 TFLOPS-hour working", _money(data, t["cost_per_1000_tflops_hour_working"])],
            ["gCO2 per working TFLOPS-hour", t["g_co2_per_tflops_hour_working"]],
            ["GPU-hours priced at the datasheet figure (never measured)", t["datasheet_gpu_hours"]],
        ],
    )
    return out


def _per_node(data: dict[str, Any]) -> str:
    rows = [[r["node"], *(r[c] for c in CLASSES), r["gpu_kwh"]] for r in data["per_node"]]
    return table(["Node", *CLASSES, "GPU kWh"], rows)
