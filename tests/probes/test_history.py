"""The probes history table: atomic day-partitioned files that read back whole."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from history.probes import (
    PROBE_SCHEMA,
    latest_gpu_verdicts,
    read_probe_history,
    record_probe_report,
    report_frame,
)
from probes.report import ProbeFailure, ProbeMeasurement, ProbeReport
from probes.verdicts import judge

DAY1 = datetime(2026, 11, 20, 23, 59, tzinfo=UTC).timestamp()
DAY2 = datetime(2026, 11, 21, 0, 1, tzinfo=UTC).timestamp()


def run(
    node: str, finished: float, values: dict[int, float], sdc_bad: int | None = None
) -> ProbeReport:
    measurements = [
        ProbeMeasurement(node, "gemm", "bf16", g, v, "TFLOPS") for g, v in values.items()
    ]
    measurements += [
        ProbeMeasurement(
            node, "sdc", "max_rel_err", g, 0.1 if g == sdc_bad else 1e-7, "rel", ok=g != sdc_bad
        )
        for g in values
    ]
    report = ProbeReport(
        node,
        "quick",
        "ok",
        finished - 30,
        finished,
        "NVIDIA H100 80GB HBM3",
        False,
        tuple(values),
        tuple(measurements),
    )
    return judge([report])[0]


def test_a_run_is_written_atomically_into_its_day(tmp_path: Path) -> None:
    path = record_probe_report(tmp_path, run("gpu-001", DAY1, {0: 700.0, 1: 700.0}))
    assert path.parent == tmp_path / "probes" / "date=2026-11-20"
    assert path.name.startswith("235900-gpu-001-") and path.suffix == ".parquet"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left


def test_runs_read_back_in_order_and_filter(tmp_path: Path) -> None:
    record_probe_report(tmp_path, run("gpu-002", DAY2, {0: 700.0}))
    record_probe_report(tmp_path, run("gpu-001", DAY1, {0: 700.0, 1: 700.0}, sdc_bad=1))
    history = read_probe_history(tmp_path)
    assert history.schema == PROBE_SCHEMA
    assert history["node"].to_list()[0] == "gpu-001" and history.height == 6
    assert read_probe_history(tmp_path, node="gpu-002").height == 2
    assert read_probe_history(tmp_path, since=DAY2)["node"].unique().to_list() == ["gpu-002"]
    bad = history.filter((history["probe"] == "sdc") & (history["gpu"] == 1)).row(0, named=True)
    assert (bad["ok"], bad["verdict"], bad["gpu_verdict"]) == (False, "fail", "fail")


def test_latest_verdicts_come_from_each_nodes_last_run(tmp_path: Path) -> None:
    record_probe_report(tmp_path, run("gpu-001", DAY1, {0: 700.0, 1: 700.0}, sdc_bad=1))
    record_probe_report(tmp_path, run("gpu-001", DAY2, {0: 700.0, 1: 700.0}))
    verdicts = latest_gpu_verdicts(read_probe_history(tmp_path))
    assert verdicts == {("gpu-001", 0): "pass", ("gpu-001", 1): "pass"}


def test_a_run_that_never_started_is_one_row_with_its_error(tmp_path: Path) -> None:
    failed = ProbeReport("gpu-003", "quick", "error", DAY1 - 1, DAY1, error="no torch")
    frame = report_frame(failed)
    assert frame.height == 1 and frame.row(0, named=True)["detail"] == "no torch"
    timeout = ProbeReport(
        "gpu-003",
        "quick",
        "timeout",
        DAY1 - 1,
        DAY1,
        gpus=(0, 1),
        failures=(ProbeFailure("gpu-003", "timeout", "late"),),
    )
    rows = report_frame(judge([timeout])[0]).row(0, named=True)
    assert (rows["kind"], rows["code"], rows["verdict"]) == ("failure", "timeout", "fail")


def test_a_damaged_file_is_skipped(tmp_path: Path) -> None:
    record_probe_report(tmp_path, run("gpu-001", DAY1, {0: 700.0}))
    (tmp_path / "probes" / "date=2026-11-20" / "broken.parquet").write_bytes(b"not parquet")
    assert read_probe_history(tmp_path).height == 2
