"""The ``probes`` history table: every probe run, one parquet file per run.

Files live in ``<data_dir>/probes/date=YYYY-MM-DD/<HHMMSS>-<node>-<token>.parquet``
(UTC day of the run's end), written atomically (temporary name, fsync, rename) by
``history.layout.write_atomic``, so readers only ever see complete runs. A run
is written once, when it ends, by whoever ran it (dashboard or ``gpufleet probe``):
probes are rare and operator-initiated, so one small file per run is fine and no
writer lock is needed. Columns are documented in docs/probes.md.
"""

from __future__ import annotations

import logging
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from history.layout import partition_dir, write_atomic
from probes.report import ProbeMeasurement, ProbeReport, ProbeVerdict

log = logging.getLogger(__name__)

PROBES = "probes"
TS = pl.Datetime("ms", "UTC")
PROBE_SCHEMA: dict[str, pl.DataType] = {
    "ts": TS,  # when the run ended
    "started": TS,
    "node": pl.String(),
    "suite": pl.String(),
    "status": pl.String(),  # ok | incomplete | timeout | cancelled | error
    "model": pl.String(),
    "simulated": pl.Boolean(),
    "kind": pl.String(),  # measurement | failure | run
    "gpu": pl.UInt16(),
    "probe": pl.String(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "unit": pl.String(),
    "ok": pl.Boolean(),
    "verdict": pl.String(),  # this row's verdict
    "gpu_verdict": pl.String(),  # the GPU's overall verdict in this run
    "reasons": pl.List(pl.String()),
    "detail": pl.String(),
    "code": pl.String(),  # failure code (timeout, probe_failed, no_torch, ...)
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def report_frame(report: ProbeReport) -> pl.DataFrame:
    """One row per measurement and per failure; a single ``run`` row when there are none."""
    gpu_verdicts = {v.gpu: v.verdict for v in report.verdicts}
    rows = [_measurement_row(report, m, gpu_verdicts) for m in report.measurements]
    for failure in report.failures:
        for gpu in failure.gpus or (None,):
            row = _base_row(report, "failure", gpu, gpu_verdicts)
            row.update(
                probe=failure.probe, verdict="fail", detail=failure.message, code=failure.code
            )
            rows.append(row)
    if not rows:
        rows.append({**_base_row(report, "run", None, gpu_verdicts), "detail": report.error})
    return pl.DataFrame(rows, schema=PROBE_SCHEMA)


def record_probe_report(data_dir: Path, report: ProbeReport) -> Path:
    """Write ``report`` as one file of the ``probes`` table; returns its path."""
    ended = datetime.fromtimestamp(report.finished, UTC)
    name = f"{ended:%H%M%S}-{_UNSAFE.sub('_', report.node)}-{secrets.token_hex(4)}.parquet"
    path = partition_dir(data_dir, PROBES, ended.date()) / name
    write_atomic(path, report_frame(report))
    return path


def read_probe_history(
    data_dir: Path, node: str | None = None, since: float | None = None
) -> pl.DataFrame:
    """Every recorded row, oldest run first; of ``node`` and ending at or after ``since``.

    Unreadable files are skipped with a warning (a damaged file never hides the rest).
    """
    frames = []
    for path in sorted((data_dir / PROBES).glob("date=*/[!.]*.parquet")):
        try:
            frames.append(_in_schema(pl.read_parquet(path)))
        except Exception as exc:  # polars raises several types for damaged files
            log.warning("skipping unreadable probe history file %s: %s", path, exc)
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=PROBE_SCHEMA)
    if node is not None:
        frame = frame.filter(pl.col("node") == node)
    if since is not None:
        frame = frame.filter(pl.col("ts") >= datetime.fromtimestamp(since, UTC))
    return frame.sort("ts", maintain_order=True)


def _in_schema(frame: pl.DataFrame) -> pl.DataFrame:
    # Files from an older version may lack a column: it reads as nulls.
    return frame.select(
        pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype).alias(name)
        for name, dtype in PROBE_SCHEMA.items()
    )


def latest_gpu_verdicts(history: pl.DataFrame) -> dict[tuple[str, int], ProbeVerdict]:
    """Each probed GPU's verdict in its node's latest judged run (for ``GpuSnapshot``)."""
    judged = history.filter(pl.col("gpu").is_not_null() & pl.col("gpu_verdict").is_not_null())
    latest = judged.group_by("node", "gpu").agg(pl.col("gpu_verdict").sort_by("ts").last())
    return {(row["node"], row["gpu"]): row["gpu_verdict"] for row in latest.iter_rows(named=True)}


def _base_row(
    report: ProbeReport, kind: str, gpu: int | None, gpu_verdicts: dict[int, ProbeVerdict]
) -> dict[str, object]:
    return {
        "ts": datetime.fromtimestamp(report.finished, UTC),
        "started": datetime.fromtimestamp(report.started, UTC),
        "node": report.node,
        "suite": report.suite,
        "status": report.status,
        "model": report.model,
        "simulated": report.simulated,
        "kind": kind,
        "gpu": gpu,
        "gpu_verdict": gpu_verdicts.get(gpu) if gpu is not None else None,
        "reasons": [],
    }


def _measurement_row(
    report: ProbeReport, m: ProbeMeasurement, gpu_verdicts: dict[int, ProbeVerdict]
) -> dict[str, object]:
    row = _base_row(report, "measurement", m.gpu, gpu_verdicts)
    row.update(
        probe=m.probe,
        metric=m.metric,
        value=m.value,
        unit=m.unit,
        ok=m.ok,
        verdict=m.verdict,
        reasons=list(m.reasons),
        detail=m.detail or m.stand_in,
    )
    return row
