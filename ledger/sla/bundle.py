"""The evidence bundle: the claim plus the raw records behind it, in one zip with a manifest.

A provider asks for "log files showing Downtime Periods" (GCP), "request logs that
corroborate" (AWS) or "monitoring data" (Voltage Park). The bundle holds the claim as
Markdown, HTML and JSON, the contract used, per-outage evidence as CSV/JSON, the
coverage log, each outage's cause with the GPU's identity (``evidence/causes.json``),
and ``SHA256SUMS`` (``sha256sum -c`` checks it) with ``MANIFEST.json`` (ledger/sla/manifest.py),
optionally signed. Entries carry a fixed timestamp, so the same history and the same
generation time give the same bytes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import zipfile
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from history.reader import HistoryReader
from history.states import StateInterval
from ledger.jobs.outages import jobs_hit_file
from ledger.repairs.bundle import repairs_evidence
from ledger.sla.causes import outage_causes
from ledger.sla.manifest import MANIFEST, SIGNATURE, data_fingerprint, manifest_json, sign
from ledger.sla.render import render_html, render_markdown
from ledger.sla.report import SlaReport, contract_json, iso, to_json

FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # zip entries carry no wall-clock time


def _csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def _outages_csv(data: dict[str, Any]) -> bytes:
    rows = [
        (kind, o["node"], o["resource_id"] or "", o["start"], o["end"], o["minutes"],
         ";".join(o["states"]), ";".join(o["reasons"]))
        for kind, key in (("counted", "outages"), ("forgiven", "forgiven_outages"),
                          ("disputed", "disputed"))
        for o in data[key]
    ]  # fmt: skip
    header = ("kind", "node", "resource_id", "start", "end", "minutes", "states", "reasons")
    return _csv(header, rows)


def _transitions_csv(report: SlaReport, history: HistoryReader, nodes: set[str]) -> bytes:
    """Every recorded state interval of the outage nodes: failed connection attempts (the
    transport's error as reason), verdict changes, the monitor's blind stretches."""
    period = report.result.period
    rows = [
        (i.node, i.state, iso(i.start_ms), "" if i.end_ms is None else iso(i.end_ms),
         ";".join(i.reasons))
        for i in _intervals(report, history)
        if i.node in nodes and i.start_ms < period.end_ms
        and (i.end_ms is None or i.end_ms > period.start_ms)
    ]  # fmt: skip
    return _csv(("node", "state", "start", "end", "reasons"), rows)


def _intervals(report: SlaReport, history: HistoryReader) -> list[StateInterval]:
    # The claim's own intervals when it read this history: the interval files are
    # partitioned by the day an interval starts, so those of days after the period's
    # last (read when the period was cut short at the last observation) all start
    # after the period ends, and the filter above leaves them out.
    if report.history is history:
        return report.intervals
    return history.intervals(report.result.period.last_day)


def _samples_around(
    report: SlaReport, history: HistoryReader, outages: list[dict[str, Any]]
) -> bytes:
    """Per outage: the node's last minute of samples before it and the first after it."""
    period = report.result.period
    minutes = history.rollups(period.days())
    per_node = minutes.group_by("ts", "node").agg(
        pl.col("util_mean").mean().alias("util_mean"), pl.col("verdict").max().alias("verdict"),
        pl.col("samples").max().alias("samples"),
    ).with_columns(pl.col("ts").dt.epoch("ms").alias("t"))  # fmt: skip
    out = []
    for o in outages:
        rows = per_node.filter(pl.col("node") == o["node"])
        start_ms = _ms(o["start"])
        end_ms = _ms(o["end"])
        before = rows.filter(pl.col("t") < start_ms).sort("t").tail(1)
        after = rows.filter(pl.col("t") >= end_ms).sort("t").head(1)
        out.append({
            "node": o["node"], "start": o["start"], "end": o["end"],
            "last_minute_before": _minute(before), "first_minute_after": _minute(after),
        })  # fmt: skip
    return json.dumps(out, indent=2).encode()


def _ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _minute(frame: pl.DataFrame) -> dict[str, Any] | None:
    if frame.is_empty():
        return None
    row = frame.row(0, named=True)
    return {"minute": iso(row["t"]), "util_mean": row["util_mean"], "verdict": row["verdict"],
            "samples": row["samples"]}  # fmt: skip


def _events_csv(report: SlaReport, history: HistoryReader, nodes: set[str]) -> bytes:
    period = report.result.period
    events = history.events(period.first_day, period.last_day)
    rows = [
        (iso(round(r["ts"].timestamp() * 1000)), r["node"], r["gpu"], r["kind"], r["code"],
         r["detail"], r["uuid"] or "")
        for r in events.iter_rows(named=True) if r["node"] in nodes
    ]  # fmt: skip
    return _csv(("ts", "node", "gpu", "kind", "code", "detail", "gpu_uuid"), rows)


def _attempts_csv(report: SlaReport, history: HistoryReader, nodes: set[str]) -> bytes:
    """Every failed connection attempt to a listed node: when, and what the error was."""
    period = report.result.period
    events = history.events(period.first_day, period.last_day)
    rows = [
        (iso(round(r["ts"].timestamp() * 1000)), r["node"], r["detail"])
        for r in events.iter_rows(named=True)
        if r["kind"] == "connect_failed" and r["node"] in nodes
    ]
    return _csv(("ts", "node", "error"), rows)


def _probes_csv(report: SlaReport, history: HistoryReader, nodes: set[str]) -> bytes:
    period = report.result.period
    probes = history.probes(since=period.start_ms / 1000)
    rows = [
        (iso(round(r["ts"].timestamp() * 1000)), r["node"], r["suite"], r["status"], r["gpu"],
         r["probe"], r["metric"], r["value"], r["unit"], r["verdict"], r["detail"])
        for r in probes.iter_rows(named=True)
        if r["node"] in nodes and r["ts"].timestamp() * 1000 < period.end_ms
    ]  # fmt: skip
    header = ("ts", "node", "suite", "status", "gpu", "probe", "metric", "value", "unit",
              "verdict", "detail")  # fmt: skip
    return _csv(header, rows)


def _coverage_csv(data: dict[str, Any]) -> bytes:
    rows = [(g["start"], g["end"], g["seconds"], g["cause"]) for g in data["coverage_log"]]
    return _csv(("start", "end", "seconds", "cause"), rows)


def bundle_files(report: SlaReport, data_dir: Path) -> dict[str, bytes]:
    """Every file of the bundle except the manifest, by name inside the zip."""
    history = report.history
    if history is None or history.data_dir != data_dir:
        history = HistoryReader(data_dir)
    data = to_json(report)
    listed = data["outages"] + data["forgiven_outages"] + data["disputed"]
    nodes = {o["node"] for o in listed}
    return {
        "claim.md": render_markdown(report).encode(),
        "claim.html": render_html(report).encode(),
        "claim.json": (json.dumps(data, indent=2) + "\n").encode(),
        "contract.json": (json.dumps(contract_json(report.contract), indent=2) + "\n").encode(),
        "evidence/outages.csv": _outages_csv(data),
        "evidence/state_intervals.csv": _transitions_csv(report, history, nodes),
        "evidence/events.csv": _events_csv(report, history, nodes),
        "evidence/connection_attempts.csv": _attempts_csv(report, history, nodes),
        "evidence/samples_around_outages.json": _samples_around(report, history, listed),
        "evidence/probes.csv": _probes_csv(report, history, nodes),
        "evidence/causes.json": outage_causes(
            report, data, history.rollups(report.result.period.days())
        ),
        "evidence/repairs.json": repairs_evidence(
            data_dir, report.result.period.start_ms, report.result.period.end_ms, listed, history
        ),
        "evidence/jobs_hit.json": jobs_hit_file(data["outages"], data_dir),
        "coverage_log.csv": _coverage_csv(data),
    }


def _sums(files: dict[str, bytes]) -> bytes:
    """``SHA256SUMS`` in ``sha256sum`` format."""
    return "".join(
        f"{hashlib.sha256(body).hexdigest()}  {name}\n" for name, body in sorted(files.items())
    ).encode()


def _header(report: SlaReport, data_dir: Path, generator: str, generated_ms: int,
            contract: bytes) -> dict[str, Any]:  # fmt: skip
    period = report.result.period
    return {
        "generator": generator,
        "generated_at": iso(generated_ms),
        "month": period.month,
        "period": {"start": iso(period.start_ms), "end": iso(period.end_ms)},
        "contract_sha256": hashlib.sha256(contract).hexdigest(),
        "data_fingerprint": data_fingerprint(data_dir, period.first_day, period.last_day),
    }


def write_bundle(
    report: SlaReport,
    data_dir: Path,
    path: Path,
    *,
    generator: str,
    generated_ms: int,
    key: Path | None = None,
) -> list[str]:
    """Write the bundle to ``path`` (atomically), signed with ``key`` when given; returns
    the names inside it."""
    files = bundle_files(report, data_dir)
    files["SHA256SUMS"] = _sums(files)
    header = _header(report, data_dir, generator, generated_ms, files["contract.json"])
    files[MANIFEST] = manifest_json(files, header)
    if key is not None:
        files[SIGNATURE] = sign(files[MANIFEST], key)
    tmp = path.with_name(f".tmp-{path.name}")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name])
    os.replace(tmp, path)
    return sorted(files)
