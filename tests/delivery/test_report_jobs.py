"""``gpufleet report`` carries the jobs section, with [jobs]' checkpoint interval.

The hand-worked month (tests/delivery/month.py) plus one job: job 7 (carol, physics)
holds n2's two GPUs from 19 Feb 00:00 and never ends. n2 is broken on 20 Feb at 00:00,
which the jobs ledger takes as the job dying whole: without checkpoints the work since
it began is lost, 2 GPUs x 24 h = 48.000 GPU-hours; with `checkpoint_interval_minutes =
30`, 2 x 0.5 h = 1.000.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from fleet.jobs import JobInterval
from gpufleet.commands.report import register
from history.jobs import JobHistoryWriter
from tests.delivery.month import at, write_month

CONFIG = """\
[contract]
gpus_per_node = 2
gpu_hour_price = 2.50
"""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("jobs") / "data"
    write_month(data)
    start = at(19).timestamp()
    job = [
        JobInterval("n2", g, f"GPU-n2-{g}", "slurm", "7", "0", "carol", start, account="physics")
        for g in (0, 1)
    ]
    JobHistoryWriter(data).flush(job, at(21).timestamp())
    return data


def _report(data: Path, tmp_path: Path, config: str, *extra: str) -> dict[str, object]:
    path = tmp_path / "gpufleet.toml"
    path.write_text(config, encoding="utf-8")
    out = tmp_path / "r.json"
    args = ["report", "--data-dir", str(data), "-c", str(path), "-o", str(out)]
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    parsed = parser.parse_args([*args, "--month", "2026-02", "--format", "json", *extra])
    assert parsed.func(parsed) == 0
    loaded: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    return loaded


def _lost(section: dict[str, object]) -> list[str]:
    data = section["data"]
    assert isinstance(data, dict)
    return [job["lost_gpu_hours"] for i in data["incidents"] for job in i["jobs"]]


def test_the_report_ends_with_the_jobs_section(data_dir: Path, tmp_path: Path) -> None:
    report = _report(data_dir, tmp_path, CONFIG)
    sections = report["sections"]
    assert isinstance(sections, list)
    assert [s["key"] for s in sections] == ["delivery", "repairs", "jobs"]
    assert _lost(sections[2]) == ["48.000"]


def test_jobs_alone_with_the_configured_checkpoint_interval(data_dir: Path, tmp_path: Path) -> None:
    config = CONFIG + "\n[jobs]\ncheckpoint_interval_minutes = 30\n"
    report = _report(data_dir, tmp_path, config, "--jobs")
    sections = report["sections"]
    assert isinstance(sections, list)
    assert [s["key"] for s in sections] == ["jobs"]
    assert _lost(sections[0]) == ["1.000"]
