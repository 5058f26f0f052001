"""One job's view: the GPUs it held, their utilization and health over the job's life."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl

from ledger.jobs.hits import Incident


@dataclass(frozen=True)
class JobGpu:
    """One GPU of a job, over the part of the job's life it held it."""

    node: str
    gpu: int
    uuid: str
    start_ms: int
    end_ms: int | None
    util_mean: float | None  # mean of the recorded minutes' mean utilization, %
    minutes: int  # recorded minutes inside the interval
    failed_minutes: int  # minutes whose verdict was fail or lost
    incidents: tuple[str, ...]  # what happened on the GPU (or its node) meanwhile


def job_view(
    job: str, jobs: pl.DataFrame, minutes: pl.DataFrame, incidents: list[Incident]
) -> list[JobGpu]:
    """``job``'s GPUs in the order it took them, from the jobs and gpu_minutes tables."""
    rows = jobs.filter(pl.col("job") == job).sort("start", "node", "gpu")
    out = []
    for held in rows.iter_rows(named=True):
        start, end = held["start"], held["end"]
        inside = minutes.filter(
            (pl.col("node") == held["node"])
            & (pl.col("gpu") == held["gpu"])
            & (pl.col("ts") >= start)
            & (pl.col("ts") < (end or datetime.max.replace(tzinfo=UTC)))
        )
        start_ms, end_ms = _ms(start), None if end is None else _ms(end)
        out.append(
            JobGpu(
                node=held["node"],
                gpu=held["gpu"],
                uuid=held["uuid"],
                start_ms=start_ms,
                end_ms=end_ms,
                util_mean=inside["util_mean"].mean() if inside.height else None,  # type: ignore[arg-type]
                minutes=inside.height,
                failed_minutes=inside.filter(pl.col("verdict").is_in(["fail", "lost"])).height,
                incidents=tuple(
                    i.detail
                    for i in incidents
                    if i.node == held["node"]
                    and i.gpu in (None, held["gpu"])
                    and start_ms <= i.at_ms
                    and (end_ms is None or i.at_ms < end_ms)
                ),
            )
        )
    return out


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
