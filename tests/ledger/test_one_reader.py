"""The SLA report reads history through one reader: each table once, shared by the bundle."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from history.reader import HistoryReader
from ledger.sla.bundle import bundle_files
from ledger.sla.report import build_report, to_json
from ledger.sla.section import SlaSection
from tests.sla.test_sla_report import CONTRACT, T0, record_september_day

NOW = T0 + 86_400


def contract() -> SlaSection:
    return SlaSection.model_validate(tomllib.loads(CONTRACT)["sla"])


def test_the_bundle_reads_nothing_the_report_did_not_read_already(tmp_path: Path) -> None:
    data = tmp_path / "data"
    record_september_day(data).close()
    report = build_report(data, contract(), "2026-09", NOW)
    expected = bundle_files(build_report(data, contract(), "2026-09", NOW), data)
    assert report.result.outages  # the evidence files have rows to lose
    for table in ("gpu_minutes", "events", "node_states", "coverage"):
        shutil.rmtree(data / table)
    # Everything the bundle holds was read while the report was built.
    assert bundle_files(report, data) == expected


def test_a_reader_reads_each_table_once_per_range(tmp_path: Path) -> None:
    data = tmp_path / "data"
    record_september_day(data).close()
    report = build_report(data, contract(), "2026-09", NOW)
    history = report.history
    assert history is not None
    period = report.result.period
    days = period.days()
    assert history.rollup_files(days) is history.rollup_files(days)
    assert history.events(period.first_day, period.last_day) is history.events(
        period.first_day, period.last_day
    )
    # A fresh reader over the same directory reads the same rows.
    fresh = HistoryReader(data)
    assert fresh.intervals(period.last_day) == history.intervals(period.last_day)
    assert fresh.rollups(days).equals(history.rollups(days))
    assert to_json(build_report(data, contract(), "2026-09", NOW)) == to_json(report)
