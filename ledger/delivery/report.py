"""``gpufleet report``'s assembly: every ledger's section of one period, as md, html or json.

Nothing in the output depends on when it was made, so the report of a stopped history
is the same bytes every time (docs/report.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

from fleet.settings.contract_section import ContractSection
from fleet.settings.jobs_section import JobsSection
from history.reader import HistoryReader
from ledger.delivery.ledger import build_ledger, period_of
from ledger.delivery.report_section import DeliverySection
from ledger.delivery.section import EnergySection
from ledger.delivery.summary import iso
from ledger.report_section import ReportPeriod, ReportSection

SCHEMA = "gpufleet-report/1"


@dataclass(frozen=True)
class Report:
    """The sections of one period, in order."""

    start_ms: int
    end_ms: int
    sections: list[ReportSection]


def report_period(
    data_dir: Path, start_ms: int, end_ms: int, contract: ContractSection | None
) -> ReportPeriod:
    """What every section is asked for."""
    return ReportPeriod(
        data_dir,
        datetime.fromtimestamp(start_ms / 1000, UTC),
        datetime.fromtimestamp(end_ms / 1000, UTC),
        contract,
    )


def build_report(
    data_dir: Path,
    start_ms: int,
    end_ms: int,
    contract: ContractSection | None,
    energy: EnergySection,
    now_ms: int,
    jobs: JobsSection | None = None,
) -> Report:
    """Every ledger's section of [start_ms, end_ms); ``jobs`` is [jobs] (checkpoints)."""
    period = report_period(data_dir, start_ms, end_ms, contract)
    ledger = build_ledger(
        HistoryReader(data_dir), period_of(start_ms, end_ms), contract or ContractSection(),
        energy, now_ms,
    )  # fmt: skip
    sections = [DeliverySection(ledger), *other_sections(period, jobs)]
    return Report(start_ms, end_ms, sections)


def other_sections(period: ReportPeriod, jobs: JobsSection | None = None) -> list[ReportSection]:
    """The other ledgers' sections, in report order."""
    from ledger.jobs.report import jobs_section
    from ledger.repairs.report import repairs_section

    return [repairs_section(period), jobs_section(period, settings=jobs)]


def build_jobs_report(
    data_dir: Path,
    start_ms: int,
    end_ms: int,
    contract: ContractSection | None,
    jobs: JobsSection | None,
) -> Report:
    """The jobs section alone (``gpufleet report --jobs``)."""
    from ledger.jobs.report import jobs_section

    period = report_period(data_dir, start_ms, end_ms, contract)
    return Report(start_ms, end_ms, [jobs_section(period, settings=jobs)])


def to_json(report: Report) -> dict[str, Any]:
    """The report's JSON form (docs/report.md, "JSON schema")."""
    return {
        "schema": SCHEMA,
        "start": iso(report.start_ms),
        "end": iso(report.end_ms),
        "sections": [
            {"key": s.key, "title": s.title, "data": s.to_json()} for s in report.sections
        ],
    }


def render_json(report: Report) -> str:
    """The JSON form, indented, with a final newline."""
    return json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"


def render_markdown(report: Report) -> str:
    """Every section under its heading."""
    head = f"# GPU fleet report {iso(report.start_ms)} to {iso(report.end_ms)}\n"
    body = [f"## {s.title}\n\n{s.markdown().rstrip()}\n" for s in report.sections]
    return "\n".join([head, *body])


_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}"
    "table{border-collapse:collapse;margin:0.5rem 0 1rem}"
    "th,td{border:1px solid #bbb;padding:0.2rem 0.5rem;text-align:left}"
)


def render_html(report: Report) -> str:
    """One self-contained page from the Markdown; raw HTML in any section is not passed."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    title = f"GPU fleet report {iso(report.start_ms)} to {iso(report.end_ms)}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + md.render(render_markdown(report))
        + "</body></html>\n"
    )
