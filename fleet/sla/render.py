"""The claim as Markdown or as a self-contained HTML page (inline CSS and SVG, no script)."""

from __future__ import annotations

from html import escape
from typing import Any

from fleet.sla.chart import chart_svg
from fleet.sla.report import SlaReport, to_json

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 960px; color: #1d2330; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border-bottom: 1px solid #d5d9e0; padding: 4px 10px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.grid { stroke: #d5d9e0; } .tick, .label { font-size: 11px; fill: #5b6475; }
.util { fill: none; stroke: #2f6fdf; stroke-width: 1.2; }
.avail { fill: #3aa76d; } .avail.below { fill: #d9534f; }
.slo { stroke: #d98b1f; stroke-dasharray: 4 3; }
"""


def _pct(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f} %"


def _summary_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    cur = data["currency"]
    return [
        ("Period", f"{data['period']['start']} to {data['period']['end']}"),
        ("Availability", _pct(data["availability_percent"])),
        ("SLO", f"{data['contract']['slo_percent']} %"),
        ("Coverage (monitored share)", _pct(data["coverage_percent"], 2)),
        ("Down node-hours", f"{data['down_node_hours']:.3f}"),
        ("Tier credit", f"{data['tier_credit_percent']} % of {data['bill']} {cur}"),
        ("Tiered credit", f"{data['tiered_credit']} {cur}"),
        ("Pro-rata credit (lost GPU-hours)", f"{data['pro_rata_credit']} {cur}"),
        (f"Owed ({data['contract']['credit_model']})", f"{data['owed']} {cur}"),
    ]


def _event_text(event: dict[str, Any]) -> str:
    code = "" if event["code"] is None else f" {event['code']}"
    gpu = "" if event["gpu"] is None else f" gpu {event['gpu']}"
    return f"{event['ts']} {event['kind']}{code}{gpu} {event['detail']}".strip()


def _outage_rows(outages: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for o in outages:
        found = "; ".join(_event_text(e) for e in o["evidence"][:5])
        more = o["evidence_count"] - min(5, o["evidence_count"])
        evidence = ", ".join(o["reasons"]) + (f" | {found}" if found else "")
        evidence += f" (+{more} more events)" if more else ""
        end = o["end"] + (" (ongoing)" if o["ongoing"] else "")
        rows.append((o["node"], o["start"], end, f"{o['minutes']:.1f}", evidence))
    return rows


OUTAGE_HEADER = ("Node", "Start (UTC)", "End (UTC)", "Minutes", "Evidence")


def render_markdown(report: SlaReport) -> str:
    """The claim as a Markdown document."""
    data = to_json(report)
    lines = [f"# SLA claim {data['month']}", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in _summary_rows(data)]
    for title, key in (
        ("Counted outages", "outages"),
        ("Forgiven outages (under the grace)", "forgiven_outages"),
    ):
        lines += ["", f"## {title}", ""]
        rows = _outage_rows(data[key])
        if not rows:
            lines.append("None.")
            continue
        lines += ["| " + " | ".join(OUTAGE_HEADER) + " |", "|---|---|---|---:|---|"]
        lines += [
            "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows
        ]
    return "\n".join(lines) + "\n"


def _html_table(header: tuple[str, ...], rows: list[tuple[str, ...]], numeric: int = -1) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="num">{escape(c)}</td>' if i == numeric else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        ) + "</tr>"
        for row in rows
    )  # fmt: skip
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _outage_table(outages: list[dict[str, Any]]) -> str:
    if not outages:
        return "<p>None.</p>"
    return _html_table(OUTAGE_HEADER, _outage_rows(outages), numeric=3)


def render_html(report: SlaReport) -> str:
    """The claim as one self-contained HTML page with its chart."""
    data = to_json(report)
    period = report.result.period
    chart = chart_svg(
        report.hourly_util, data["daily"], float(report.contract.slo_percent),
        period.start_ms, period.start_ms + len(data["daily"]) * 86_400_000,
    )  # fmt: skip
    summary = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in _summary_rows(data)
    )
    sections = [
        f"<h1>SLA claim {escape(data['month'])}</h1>",
        f"<table>{summary}</table>",
        chart,
        "<h2>Counted outages</h2>",
        _outage_table(data["outages"]),
        "<h2>Forgiven outages (under the grace)</h2>",
        _outage_table(data["forgiven_outages"]),
    ]  # fmt: skip
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>SLA claim {escape(data['month'])}</title><style>{_CSS}</style></head>\n"
        "<body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
