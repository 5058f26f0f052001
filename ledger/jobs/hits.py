"""Which jobs a failure, an outage or a probe finding hit, and the GPU-hours each lost.

An incident on one GPU (a hardware XID, a lost GPU, an uncorrectable ECC error, a
failed probe) hits every job on that GPU at that moment; an outage of a node (broken
or unreachable) hits every job on the node. A hit job is taken to have died whole: a
multi-GPU job does not survive one of its GPUs (collectives hang, the launcher tears
the job down), so every GPU the job held anywhere in the fleet loses its work.

The work lost per GPU is what the job had not saved: the checkpoint interval when one
is configured (``[jobs] checkpoint_interval_minutes``, a bound: on average half of it
is lost), else everything since the job began. Hours are exact decimals of the
recorded milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

import polars as pl

from fleet.xid import describe
from history.states import StateInterval

MS_PER_HOUR = Decimal(3_600_000)
OUTAGE_STATES = ("broken", "unreachable")
GPU_EVENT_KINDS = ("gpu_lost", "dbe")


@dataclass(frozen=True)
class Incident:
    """Something that stops work: on one GPU (``gpu`` set) or a whole node (None)."""

    kind: str  # xid | gpu_lost | dbe | outage | probe
    node: str
    gpu: int | None
    at_ms: int
    detail: str


@dataclass(frozen=True)
class JobHit:
    """One job hit by one incident."""

    job: str
    user: str
    account: str
    name: str
    gpus: int  # GPUs the job held at the incident
    lost_gpu_hours: Decimal


def incidents(
    events: pl.DataFrame, outages: list[StateInterval], probes: pl.DataFrame
) -> list[Incident]:
    """The incidents of ``events`` (history's events table), ``outages`` (node-state
    intervals) and ``probes`` (the probes table), oldest first."""
    found: list[Incident] = []
    for node, gpu, ts, kind, code, detail in events.select(
        "node", "gpu", pl.col("ts").dt.epoch("ms"), "kind", "code", "detail"
    ).iter_rows():
        if kind == "xid" and code is not None and describe(int(code)).verdict == "fail":
            found.append(
                Incident("xid", node, gpu, ts, f"XID {code}: {describe(int(code)).meaning}")
            )
        elif kind in GPU_EVENT_KINDS:
            found.append(Incident(kind, node, gpu, ts, detail or kind))
    for interval in outages:
        if interval.state in OUTAGE_STATES:
            reasons = "; ".join(interval.reasons) or interval.state
            found.append(Incident("outage", interval.node, None, interval.start_ms, reasons))
    failed = probes.filter(pl.col("verdict") == "fail")
    for node, gpu, ts, probe in (
        failed.select("node", "gpu", pl.col("ts").dt.epoch("ms"), "probe")
        .unique(maintain_order=True)
        .iter_rows()
    ):
        found.append(Incident("probe", node, gpu, ts, f"probe {probe or 'run'} failed"))
    return sorted(found, key=lambda i: (i.at_ms, i.node, -1 if i.gpu is None else i.gpu))


def jobs_hit(incident: Incident, jobs: pl.DataFrame, checkpoint_ms: int | None) -> list[JobHit]:
    """The jobs ``incident`` hit, each with its lost GPU-hours (see the module doc).

    Args:
        jobs: the jobs history table (``history.jobs.read_job_history``).
        checkpoint_ms: the checkpoint interval, or None (work since the job began).
    """
    at = datetime.fromtimestamp(incident.at_ms / 1000, UTC)
    running = jobs.filter(
        (pl.col("start") <= at) & (pl.col("end").is_null() | (pl.col("end") > at))
    )
    here = running.filter(pl.col("node") == incident.node)
    if incident.gpu is not None:
        here = here.filter(pl.col("gpu") == incident.gpu)
    hits = []
    for job in sorted(set(here["job"].to_list())):
        held = running.filter(pl.col("job") == job)
        gpus = held.select("node", "gpu").unique().height
        began_ms = int(held.select(pl.col("start").min().dt.epoch("ms")).item())
        lost_ms = incident.at_ms - began_ms
        if checkpoint_ms is not None:
            lost_ms = min(lost_ms, checkpoint_ms)
        first = held.row(0, named=True)
        hits.append(
            JobHit(
                job=job,
                user=first["user"] or "",
                account=first["account"] or "",
                name=first["name"] or "",
                gpus=gpus,
                lost_gpu_hours=Decimal(gpus * lost_ms) / MS_PER_HOUR,
            )
        )
    return hits
