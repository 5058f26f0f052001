"""The claim as Markdown or as a self-contained HTML page (inline CSS and SVG, no script)."""

from __future__ import annotations

from decimal import Decimal
from html import escape
from typing import Any

from ledger.sla.chart import availability_floor, chart_svg
from ledger.sla.report import SlaReport, to_json

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 960px; color: #1d2330; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border-bottom: 1px solid #d5d9e0; padding: 4px 10px; text-align: left; }
td, th { white-space: nowrap; vertical-align: top; }
td:last-child { white-space: normal; overflow-wrap: anywhere; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.status { font-weight: 600; }
svg { max-width: 100%; height: auto; }
.grid { stroke: #d5d9e0; } .tick, .label { font-size: 11px; fill: #5b6475; }
.util { fill: none; stroke: #2f6fdf; stroke-width: 1.2; } .util-dot { fill: #2f6fdf; }
.avail { fill: #3aa76d; } .avail.below { fill: #d9534f; }
.slo { stroke: #d98b1f; stroke-dasharray: 4 3; }
"""


def _pct(value: float | None, digits: int = 4) -> str:
    return "n/a (not measured)" if value is None else f"{value:.{digits}f} %"


def money(amount: str, currency: str) -> str:
    """A decimal money string with thousands separators: ``115,200.00 USD``."""
    return f"{Decimal(amount):,.2f} {currency}"


def status_line(data: dict[str, Any]) -> str:
    """How to read the figures: final, or provisional month to date with its coverage."""
    if not data["provisional"]:
        return f"Final for {data['month']} (the month has ended)."
    return (
        f"Provisional: {data['month']} to date, as of {data['period']['end']}, "
        f"coverage {data['coverage_percent']:.2f} %. Credits are so far, not owed yet."
    )


def _availability(data: dict[str, Any]) -> str:
    value = data["availability_percent"]
    if value is None:
        return _pct(None)
    verdict = "meets" if data["slo_met"] else "below"
    verdict += " the SLO so far" if data["provisional"] else " the SLO"
    return f"{_pct(value)} ({verdict})"


def _summary_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    so_far = " so far" if data["provisional"] else ""
    rows = [("Subject", data["subject"])]
    rows += [(k, data[key]) for k, key in (("Account", "account_id"), ("Contract", "contract_id"))
             if data[key]]  # fmt: skip
    rows += [
        ("Period", f"{data['period']['start']} to {data['period']['end']}"),
        ("Availability", _availability(data)),
        ("SLO", f"{data['contract']['slo_percent']} %"),
        ("Coverage (observed share)", _pct(data["coverage_percent"], 2)),
        ("Unmonitored node-hours", f"{data['unmonitored_node_seconds'] / 3600:,.3f}"),
        ("Disputed node-hours (not counted)", f"{data['disputed_node_seconds'] / 3600:,.3f}"),
        ("Down node-hours", data["down_node_hours_text"].removesuffix(" node-hours")),
    ]
    if data["unseen_slots"]["text"]:
        rows.append(("Never seen", data["unseen_slots"]["text"]))
    if data["contract_note"]:
        rows.append(("Contract", data["contract_note"]))
    rows += _money_rows(data, so_far)
    if data["credit_capped"]:
        rows.append(("Cap", f"capped at {data['contract']['credit_cap_percent']} % of the bill"))
    if data["claim_deadline"]:
        rows.append(("Last day to claim", data["claim_deadline"]))
    return rows


def _money_rows(data: dict[str, Any], so_far: str) -> list[tuple[str, str]]:
    cur = data["currency"]
    owed = f"Owed{so_far} ({data['contract']['credit_model']})"
    names = (
        ("Tiered credit" + so_far, "tiered_credit"),
        ("Pro-rata credit (lost GPU-hours)" + so_far, "pro_rata_credit"),
        (owed, "owed"),
    )
    tier = ("Tier credit", f"{data['tier_credit_percent']} % of {money(data['bill'], cur)}")
    if data["money_withheld"] is None:
        return [tier, *((label, money(data[key], cur)) for label, key in names)]
    projection = data["projection"]
    rows = [(label, data["money_withheld"]) for label, key in names]
    label = projection["label"]
    rows += [(f"{name} ({label})", money(projection[key], cur)) for name, key in names]
    return rows


def _event_text(event: dict[str, Any]) -> str:
    code = "" if event["code"] is None else f" {event['code']}"
    gpu = "" if event["gpu"] is None else f" gpu {event['gpu']}"
    return f"{event['ts']} {event['kind']}{code}{gpu} {event['detail']}".strip()


def _outage_rows(outages: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for o in outages:
        node = o["node"] + (f" ({o['resource_id']})" if o.get("resource_id") else "")
        found = "; ".join(_event_text(e) for e in o["evidence"][:5])
        more = o["evidence_count"] - min(5, o["evidence_count"])
        evidence = ", ".join(o["reasons"]) + (f" | {found}" if found else "")
        evidence += f" (+{more} more events)" if more else ""
        end = o["end"] + (" (ongoing)" if o["ongoing"] else "")
        rows.append((node, o["start"], end, f"{o['minutes']:.1f}", evidence))
    return rows


OUTAGE_HEADER = ("Node", "Start (UTC)", "End (UTC)", "Minutes", "Evidence")
SECTIONS = (
    ("Counted outages", "outages"),
    ("Forgiven outages (under the grace)", "forgiven_outages"),
    ("Disputed: many nodes lost at once, no witness failing (operator decides)", "disputed"),
)
GAP_HEADER = ("Start (UTC)", "End (UTC)", "Seconds", "Cause")


def _gap_rows(data: dict[str, Any]) -> list[tuple[str, ...]]:
    log = data["coverage_log"]
    return [(g["start"], g["end"], f"{g['seconds']:,.0f}", g["cause"]) for g in log]


def _coverage_rows(data: dict[str, Any]) -> list[tuple[str, ...]]:
    return [(node, f"{pct:.2f} %") for node, pct in data["coverage_by_node"].items()]


Table = tuple[str, tuple[str, ...], list[tuple[str, ...]], int]


def _tables(data: dict[str, Any]) -> list[Table]:
    """Every section after the summary: (title, header, rows, numeric column)."""
    out: list[Table] = [
        (title, OUTAGE_HEADER, _outage_rows(data[key]), 3) for title, key in SECTIONS
    ]
    if data["instances"]:
        rows: list[tuple[str, ...]] = [
            (i["node"] + (f" ({i['resource_id']})" if i["resource_id"] else ""),
             _pct(i["availability_percent"]), f"{i['tier_credit_percent']} %",
             data["money_withheld"] if i["credit"] is None
             else money(i["credit"], data["currency"]))
            for i in data["instances"]
        ]  # fmt: skip
        out.append(("Per instance", ("Node", "Availability", "Tier", "Credit"), rows, 3))
    out.append(("Monitor gaps (unmonitored or excluded, with cause)", GAP_HEADER,
                _gap_rows(data), 2))  # fmt: skip
    out.append(("Coverage per node", ("Node", "Observed share"), _coverage_rows(data), 1))
    out.append((APPENDIX, DEGRADED_HEADER, _degraded_rows(data["gpu_degraded_appendix"]), 1))
    return out


APPENDIX = "Appendix: GPU-degraded time (not part of the claim or the credit)"
DEGRADED_HEADER = ("Node", "GPU-h fail", "GPU-h lost", "GPU-h warn", "Broken for", "Events")


def _degraded_rows(appendix: dict[str, Any]) -> list[tuple[str, ...]]:
    gpu_hours = appendix.get("gpu_hours", {})
    reasons = appendix.get("broken_hours_by_reason", {})
    events = appendix.get("events", {})
    rows: list[tuple[str, ...]] = []
    for node in sorted(set(gpu_hours) | set(reasons) | set(events)):
        hours = gpu_hours.get(node, {})
        rows.append((
            node,
            *(f"{hours.get(v, 0.0):,.2f}" for v in ("fail", "lost", "warn")),
            "; ".join(f"{r}: {h:,.2f} h" for r, h in reasons.get(node, {}).items()),
            ", ".join(f"{k} x{n}" for k, n in events.get(node, {}).items()),
        ))  # fmt: skip
    return rows


def _md_cell(cell: str) -> str:
    return cell.replace("|", "\\|")


def render_markdown(report: SlaReport) -> str:
    """The claim as a Markdown document."""
    data = to_json(report)
    lines = [f"# SLA claim {data['month']}", "", f"**{status_line(data)}**", ""]
    lines += ["| | |", "|---|---|"]
    lines += [f"| {k} | {_md_cell(v)} |" for k, v in _summary_rows(data)]
    for title, header, rows, numeric in _tables(data):
        lines += ["", f"## {title}", ""]
        if not rows:
            lines.append("None.")
            continue
        align = ["---:" if i == numeric else "---" for i in range(len(header))]
        lines += ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
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


def render_html(report: SlaReport) -> str:
    """The claim as one self-contained HTML page with its chart."""
    data = to_json(report)
    period = report.result.period
    contract = report.contract
    slo = float(contract.slo_percent)
    floor = availability_floor([float(t.below) for t in contract.tiers], slo)
    # The axis spans the whole month, also month to date: the rest is visibly still to come.
    chart = chart_svg(
        report.hourly_util, data["daily"], slo, period.start_ms, period.month_end_ms, floor
    )
    summary = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in _summary_rows(data)
    )
    sections = [
        f"<h1>SLA claim {escape(data['month'])}</h1>",
        f'<p class="status">{escape(status_line(data))}</p>',
        f'<table class="summary">{summary}</table>',
        chart,
    ]
    for title, header, rows, numeric in _tables(data):
        table = _html_table(header, rows, numeric) if rows else "<p>None.</p>"
        sections += [f"<h2>{escape(title)}</h2>", table]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>SLA claim {escape(data['month'])}</title><style>{_CSS}</style></head>\n"
        "<body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
