"""The report's forms for people and CI: Markdown, HTML (with the scaling plot), JUnit XML.

All three render the JSON document of ``campaign.report`` so they always agree. Node
names, evidence and details come from nodes and configs: HTML and XML escape them.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import Any


def report_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: summary, one line per node, the ladder, the timeline."""
    s = report["summary"]
    lines = [
        "# Acceptance campaign",
        "",
        f"{s['accepted']} of {s['nodes']} nodes accepted ({s['accepted_percent']} %), "
        f"{s['rejected']} rejected, {s['pending']} pending"
        + ("" if report["complete"] else " (campaign not finished)"),
        "",
        "| Node | Verdict | Stage | Evidence |",
        "|---|---|---|---|",
    ]
    for node in report["nodes"]:
        evidence = "; ".join(_evidence_text(e) for e in node["evidence"]) or "-"
        lines.append(
            f"| {_cell(node['name'])} | {node['status']} | {node['stage'] or '-'} "
            f"| {_cell(evidence)} |"
        )
    lines += ["", "## Failures by cause", ""]
    lines += [f"- {cause}: {count}" for cause, count in s["failures_by_cause"].items()] or [
        "- none"
    ]
    lines += _ladder_lines(report["fabric"]) + _soak_lines(report["soak"])
    lines += ["", "## Timeline", "", "| What | From | To | Note |", "|---|---|---|---|"]
    for t in report["timeline"]:
        lines.append(
            f"| {t['what']} | {_time(t['started_at'])} | {_time(t['ended_at'])} "
            f"| {_cell(t['note'])} |"
        )
    return "\n".join(lines) + "\n"


def _ladder_lines(fabric: dict[str, Any]) -> list[str]:
    denominator = fabric["denominator_gbps"]
    shown = f"{denominator:.4g} GB/s" if denominator is not None else "none measured"
    lines = [
        "",
        "## Fabric ladder",
        "",
        f"Floor: {fabric['fraction']:g} of the {fabric['denominator']} denominator ({shown}).",
        "",
        "| Nodes | Purpose | Status | Bus bandwidth GB/s | Floor GB/s | Seconds | Members |",
        "|---|---|---|---|---|---|---|",
    ]
    for step in fabric["steps"]:
        lines.append(
            f"| {len(step['nodes'])} | {step['purpose']} | {step['status']} "
            f"| {_figure(step['busbw_gbps'])} | {_figure(step['floor_gbps'])} "
            f"| {step['seconds']:.1f} | {_cell(', '.join(step['nodes']))} |"
        )
    return lines


def _soak_lines(soak: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## Soak",
        "",
        f"Monitored {soak['monitored_s']:.0f} s of {soak['planned_s']:.0f} s.",
    ]
    for gap in soak["gaps"]:
        lines.append(f"Gap: {_time(gap['from'])} to {_time(gap['to'])}: {gap['note']}.")
    return lines


def report_html(report: dict[str, Any]) -> str:
    """The Markdown's content as a standalone HTML page, with the scaling plot as SVG."""
    body: list[str] = []
    rows: list[str] = []

    def end_table() -> None:
        if rows:
            body.append("<table>" + "\n".join(rows) + "</table>")
            rows.clear()

    for line in report_markdown(report).splitlines():
        if line.startswith("|---"):
            continue
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in line.strip("|").split(" | ")]
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
            continue
        end_table()
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
            if line == "## Fabric ladder":
                body.append(scaling_svg(report["fabric"]["scaling"]))
        elif line:
            body.append(f"<p>{html.escape(line)}</p>")
    end_table()
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Acceptance campaign'
        "</title><style>table{border-collapse:collapse}td{border:1px solid #999;"
        "padding:2px 6px}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def scaling_svg(points: list[dict[str, Any]], width: int = 360, height: int = 180) -> str:
    """Bus bandwidth against node count as an SVG line (empty axes without points)."""
    if not points:
        return f'<svg width="{width}" height="{height}"></svg>'
    top = max(p["busbw_gbps"] for p in points) or 1.0
    most = max(p["nodes"] for p in points)
    xy = [
        (20 + (width - 40) * p["nodes"] / most, height - 20 - (height - 40) * p["busbw_gbps"] / top)
        for p in points
    ]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    labels = "".join(
        f'<text x="{x:.1f}" y="{height - 4}" font-size="10">{p["nodes"]}</text>'
        for (x, _), p in zip(xy, points, strict=True)
    )
    return (
        f'<svg width="{width}" height="{height}" role="img" aria-label="bus bandwidth '
        f'against node count"><polyline fill="none" stroke="black" points="{line}"/>'
        f"{labels}</svg>"
    )


def report_junit(report: dict[str, Any]) -> str:
    """JUnit XML: one test case per node, a failure for each rejected node."""
    s = report["summary"]
    suites = ET.Element("testsuites", name="gpufleet accept")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name="acceptance",
        tests=str(s["nodes"]),
        failures=str(s["rejected"]),
        errors="0",
        skipped=str(s["pending"]),
    )
    for node in report["nodes"]:
        case = ET.SubElement(suite, "testcase", classname="acceptance", name=node["name"])
        if node["status"] == "rejected":
            first = node["evidence"][0]
            failure = ET.SubElement(
                case,
                "failure",
                type=f"{first['stage']}/{first['cause']}",
                message=_evidence_text(first)[:500],
            )
            failure.text = "\n".join(_evidence_text(e) for e in node["evidence"])
        elif node["status"] == "pending":
            ET.SubElement(case, "skipped", message="campaign not finished")
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _evidence_text(e: dict[str, Any]) -> str:
    parts = [f"{e['stage']}: {e['cause']}: {e['message']}"]
    if e.get("measured") is not None and e.get("threshold") is not None:
        parts.append(f"measured {e['measured']:.4g} against {e['threshold']:.4g}")
    if e.get("peer_median") is not None:
        parts.append(f"peer median {e['peer_median']:.4g}")
    if e.get("serial"):
        parts.append(f"serial {e['serial']}")
    return ", ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _time(t: float | None) -> str:
    if t is None:
        return "-"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S")
