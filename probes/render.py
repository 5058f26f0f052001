"""Plain-text and JSON views of probe runs, for ``gpufleet probe`` (no terminal UI library)."""

from __future__ import annotations

import dataclasses
from typing import Any

from probes.report import ProbeMeasurement, ProbeProgress, ProbeReport

BAR_WIDTH = 30


def progress_line(event: ProbeProgress, width: int = BAR_WIDTH) -> str:
    """``node-001 [##########..........] 12/40 gemm GPU 3``."""
    filled = round(event.fraction * width)
    bar = "#" * filled + "." * (width - filled)
    return f"{event.node} [{bar}] {event.step}/{event.steps} {event.probe} GPU {event.gpu}"


def report_dict(report: ProbeReport) -> dict[str, Any]:
    """The report as JSON-able data (``--json``)."""
    return dataclasses.asdict(report)


def report_text(report: ProbeReport) -> str:
    """A per-GPU table of figures and verdicts, then the reasons and failures."""
    lines = [_headline(report)]
    columns = _columns(report.measurements)
    if report.gpus and columns:
        lines.append("")
        lines.extend(_table(report, columns))
    for verdict in report.verdicts:
        for reason in verdict.reasons:
            lines.append(f"  GPU {verdict.gpu} {verdict.verdict}: {reason}")
    for failure in report.failures:
        if not failure.gpus:
            lines.append(f"  {failure.code}: {failure.message}")
    return "\n".join(lines)


def _headline(report: ProbeReport) -> str:
    seconds = report.finished - report.started
    model = report.model or "unknown GPU"
    note = " (simulated: compared with its peers only)" if report.simulated else ""
    head = f"{report.node}  {report.suite} suite  {report.status}  {model}{note}  {seconds:.1f}s"
    return head + (f"\n  {report.error}" if report.error else "")


def _columns(measurements: tuple[ProbeMeasurement, ...]) -> list[tuple[str, str, str]]:
    seen: dict[tuple[str, str], str] = {}
    for m in measurements:
        seen.setdefault((m.probe, m.metric), m.unit)
    return [(probe, metric, unit) for (probe, metric), unit in seen.items()]


def _table(report: ProbeReport, columns: list[tuple[str, str, str]]) -> list[str]:
    headers = ["GPU", "verdict", *(f"{p} {m} ({u})" for p, m, u in columns)]
    rows = []
    for gpu in report.gpus:
        cells = [str(gpu), report.verdict_of(gpu) or "-"]
        for probe, metric, _ in columns:
            value = report.figure(probe, metric, gpu)
            cells.append("N/A" if value is None else f"{value:.4g}")
        rows.append(cells)
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [headers, *rows]
    ]
