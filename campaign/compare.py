"""``gpufleet accept --compare``: campaigns side by side, the test-before-you-buy table.

Per report: acceptance rate, bus bandwidth at the smallest and largest node counts
(fabric scaling), measured GEMM TFLOPS per GPU and, with the contract's GPU-hour
price, the price of 1,000 TFLOPS-hours delivered, and the failures by cause.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from campaign.report import SCHEMA, usd_per_kilo_tflops_hour

MAX_REPORT_BYTES = 16 << 20


def load_reports(paths: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(name, report) per file, in order.

    Raises:
        OSError: a file cannot be read.
        ValueError: a file is not an acceptance report of this schema.
    """
    loaded = []
    for path in paths:
        with path.open("rb") as handle:
            raw = handle.read(MAX_REPORT_BYTES + 1)
        if len(raw) > MAX_REPORT_BYTES:
            raise ValueError(f"{path}: larger than {MAX_REPORT_BYTES} bytes")
        try:
            report = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
        if not isinstance(report, dict) or report.get("schema") != SCHEMA:
            raise ValueError(f"{path}: not a {SCHEMA} report")
        loaded.append((path.stem if path.stem != "report" else str(path.parent.name), report))
    return loaded


def compare_rows(reports: list[tuple[str, dict[str, Any]]]) -> list[dict[str, str]]:
    """One row of display texts per report."""
    return [_row(name, report) for name, report in reports]


def compare_table(reports: list[tuple[str, dict[str, Any]]]) -> str:
    """The side-by-side table in Markdown."""
    header = [
        "Campaign",
        "Accepted",
        "Fabric scaling",
        "TFLOPS/GPU",
        "Price per 1,000 TFLOPS-h",
        "Failures by cause",
    ]
    keys = ["name", "accepted", "scaling", "tflops", "price", "causes"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in compare_rows(reports):
        lines.append("| " + " | ".join(row[k].replace("|", "\\|") for k in keys) + " |")
    return "\n".join(lines) + "\n"


def _row(name: str, report: dict[str, Any]) -> dict[str, str]:
    s = report["summary"]
    tflops = report.get("tflops_per_gpu")
    contract = report.get("contract") or {}
    price = _decimal(contract.get("gpu_hour_price"))
    per_kilo = usd_per_kilo_tflops_hour(price, tflops)
    causes = ", ".join(f"{c} {n}" for c, n in s["failures_by_cause"].items()) or "none"
    return {
        "name": name,
        "accepted": f"{s['accepted']}/{s['nodes']} ({s['accepted_percent']} %)",
        "scaling": _scaling(report["fabric"]["scaling"]),
        "tflops": "-" if tflops is None else f"{tflops:.4g}",
        "price": "-" if per_kilo is None else f"{contract.get('currency', 'USD')} {per_kilo}",
        "causes": causes,
    }


def _scaling(points: list[dict[str, Any]]) -> str:
    if len(points) < 2:
        return "-"
    first, last = points[0], points[-1]
    kept = last["busbw_gbps"] / first["busbw_gbps"] if first["busbw_gbps"] else 0.0
    return f"{first['nodes']}->{last['nodes']} nodes: {100 * kept:.0f} %"


def _decimal(text: object) -> Decimal | None:
    if not isinstance(text, str):
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value if value.is_finite() and value >= 0 else None
