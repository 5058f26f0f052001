"""The jobs section of ``gpufleet report --jobs``: jobs hit by incidents, idle time, jobs.

Money and hours are strings of exact decimals in the JSON (hours to 0.001, money to
the cent, half-even as a ledger rounds); docs/jobs.md describes every key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import polars as pl

from fleet.settings.contract_section import ContractSection
from fleet.settings.jobs_section import JobsSection
from history.jobs import read_job_history
from history.reader import HistoryReader
from ledger.delivery.ledger import read_minutes
from ledger.jobs.hits import Incident, JobHit, incidents, jobs_hit
from ledger.jobs.idle import IdleRow, idle_by, job_minutes
from ledger.report_section import ReportPeriod, ReportSection

HOURS = Decimal("0.001")
CENTS = Decimal("0.01")


@dataclass(frozen=True)
class JobsReport:
    """What the section shows, computed once."""

    hits: list[tuple[Incident, list[JobHit]]]
    idle: dict[str, list[IdleRow]]  # by "job", "user", "account"
    jobs: list[dict[str, Any]]
    currency: str
    priced: bool


@dataclass(frozen=True)
class JobsSectionBody:
    """The report's jobs section (a :class:`ReportSection`)."""

    report: JobsReport
    key: str = "jobs"
    title: str = "Jobs: incidents that hit them, idle GPU time"

    def to_json(self) -> dict[str, Any]:
        """See docs/jobs.md, "The report section"."""
        return jobs_json(self.report)

    def markdown(self) -> str:
        """Incidents with the jobs they hit, then idle time by account, user and job."""
        return jobs_markdown(self.report)


def jobs_section(period: ReportPeriod, settings: JobsSection | None = None) -> ReportSection:
    """The jobs section of ``period``; ``settings`` gives the checkpoint interval."""
    return JobsSectionBody(build_report(period, settings or JobsSection()))


def build_report(period: ReportPeriod, settings: JobsSection) -> JobsReport:
    """Read the period's history once and join jobs with incidents and idle minutes."""
    start, end = period.start.timestamp(), period.end.timestamp()
    contract = period.contract or ContractSection()
    history = HistoryReader(period.data_dir)
    first, last = period.start.date(), period.end.date()
    jobs = read_job_history(period.data_dir, start, end)
    found = [
        i
        for i in incidents(
            history.events(first, last), history.intervals(last), history.probes(start)
        )
        if start * 1000 <= i.at_ms < end * 1000
    ]
    ckpt = settings.checkpoint_interval_minutes
    checkpoint_ms = None if ckpt is None else int(ckpt * 60_000)
    hits = [(i, jobs_hit(i, jobs, checkpoint_ms)) for i in found]
    days = sorted({first, last} | set(history_days(period)))
    minutes = read_minutes(history, days).filter(
        (pl.col("ts") >= period.start) & (pl.col("ts") < period.end)
    )
    held = job_minutes(minutes, jobs, contract)
    price = contract.gpu_hour_price
    idle = {key: idle_by(held, key, price) for key in ("account", "user", "job")}
    return JobsReport(
        hits=[(i, h) for i, h in hits if h],
        idle=idle,
        jobs=_job_rows(jobs),
        currency=contract.currency,
        priced=price is not None,
    )


def history_days(period: ReportPeriod) -> list[Any]:
    """Every UTC day the period touches."""
    day, out = period.start.date(), []
    while day <= period.end.date():
        out.append(day)
        day = day.fromordinal(day.toordinal() + 1)
    return out


def _job_rows(jobs: pl.DataFrame) -> list[dict[str, Any]]:
    grouped = jobs.group_by("job").agg(
        pl.col("user").first(),
        pl.col("account").first(),
        pl.col("name").first(),
        pl.col("partition").first(),
        gpus=pl.struct("node", "gpu").n_unique(),
        start=pl.col("start").min(),
        end=pl.when(pl.col("end").is_null().any()).then(None).otherwise(pl.col("end").max()),
    )
    return grouped.sort("start", "job").to_dicts()


def _hours(value: Decimal) -> str:
    return str(value.quantize(HOURS, ROUND_HALF_EVEN))


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value.quantize(CENTS, ROUND_HALF_EVEN))


def _iso(moment: datetime | int | None) -> str | None:
    if moment is None:
        return None
    if isinstance(moment, int):
        moment = datetime.fromtimestamp(moment / 1000, UTC)
    return moment.isoformat().replace("+00:00", "Z")


def jobs_json(report: JobsReport) -> dict[str, Any]:
    """The section's JSON-ready values."""
    return {
        "currency": report.currency if report.priced else None,
        "incidents": [
            {
                "kind": i.kind,
                "node": i.node,
                "gpu": i.gpu,
                "at": _iso(i.at_ms),
                "detail": i.detail,
                "jobs": [
                    {
                        "job": h.job,
                        "user": h.user,
                        "account": h.account,
                        "name": h.name,
                        "gpus": h.gpus,
                        "lost_gpu_hours": _hours(h.lost_gpu_hours),
                    }
                    for h in hits
                ],
            }
            for i, hits in report.hits
        ],
        "idle": {
            key: [
                {
                    key: row.key,
                    "idle_gpu_hours": _hours(row.idle_gpu_hours),
                    "held_gpu_hours": _hours(row.held_gpu_hours),
                    "cost": _money(row.cost),
                }
                for row in rows
            ]
            for key, rows in report.idle.items()
        },
        "jobs": [
            {**row, "start": _iso(row["start"]), "end": _iso(row["end"])} for row in report.jobs
        ],
    }


def jobs_markdown(report: JobsReport) -> str:
    """The section's tables in Markdown."""
    data = jobs_json(report)
    lines = ["| When | Node | GPU | What | Jobs hit (GPU-hours lost) |", "|---|---|---|---|---|"]
    for item in data["incidents"]:
        hit = ", ".join(f"{j['job']} {j['user']} ({j['lost_gpu_hours']})" for j in item["jobs"])
        gpu = "all" if item["gpu"] is None else item["gpu"]
        lines.append(
            f"| {item['at']} | {item['node']} | {gpu} | {_cell(item['detail'])} | {_cell(hit)} |"
        )
    if not data["incidents"]:
        lines.append("| | | | no incident hit a job | |")
    currency = data["currency"] or ""
    for key in ("account", "user", "job"):
        lines += [
            "",
            f"| {key.capitalize()} | Idle GPU-hours | Held GPU-hours | Idle cost {currency} |",
        ]
        lines.append("|---|---:|---:|---:|")
        for row in data["idle"][key]:
            cost = row["cost"] if row["cost"] is not None else "-"
            hours = f"{row['idle_gpu_hours']} | {row['held_gpu_hours']}"
            lines.append(f"| {_cell(row[key])} | {hours} | {cost} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """A table cell: pipes and line breaks would break the row."""
    return text.replace("|", "\\|").replace("\n", " ")
