"""The demo's story end to end, through every part of this feature in turn.

Simulated Slurm jobs (the ``job`` kind) → the fake /proc → the agent's attribution →
the ``jobs`` line → the controller's decoder → live jobs → the jobs table → with an
XID 79 in the events table, the report names the job hit and its lost GPU-hours, and
the idle job's GPU-hours go to its user. The scheduler's answer comes from the
simulated login node. Times: the demo starts at 2026-01-01T00:00Z; job 4242 (alice)
holds node-003's 8 GPUs from 0 s; job 5150 (bob) holds node-006's GPUs 0-1 idle.
At 1 h the XID 79 on node-003 GPU 5: 8 GPUs x 1 h = 8.000 GPU-hours lost.
Idle: bob's 2 GPUs x 60 recorded idle minutes = 2.000 GPU-hours x 3.00 = 6.00 USD.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType

import polars as pl

from collectors.agent.jobs import JobWatch, attribute, jobs_message
from collectors.protocol import Jobs, decode_line
from collectors.sim.jobs import JobProcs, gpu_pids, running_jobs, squeue_answer
from collectors.sim.scenario import Fault
from fleet.jobs import LiveJobs
from fleet.settings.contract_section import ContractSection
from fleet.settings.jobs_section import JobsSection
from history.jobs import JobHistoryWriter
from history.layout import EVENTS, GPU_MINUTES, SCHEMAS, partition_dir, write_atomic
from ledger.jobs.report import jobs_section
from ledger.jobs.slurm_meta import SlurmMetadata, describer, parse_jobs
from ledger.report_section import ReportPeriod

DAY = datetime(2026, 1, 1, tzinfo=UTC)
T0 = DAY.timestamp()
NODES = {"node-003": 8, "node-006": 8}


def _fault(node: str, gpu: int | None, **params: object) -> tuple[Fault, float]:
    return Fault("job", node, gpu, None, 0.0, None, MappingProxyType(dict(params))), float("inf")


FAULTS = {
    "node-003": [_fault("node-003", None, id=4242, user="alice", account="nlp", name="pretrain")],
    "node-006": [
        _fault("node-006", g, id=5150, user="bob", account="vision", idle=True) for g in (0, 1)
    ],
}


def _uuids(node: str) -> list[str]:
    return [
        f"GPU-{zlib.crc32(node.encode()) % 10**8:08d}-0000-0000-0000-{g:012d}" for g in range(8)
    ]


async def _no_login_node(argv: Sequence[str]) -> bytes:
    raise AssertionError("the cache is filled from the simulated login node's answer")


def _agent_line(node: str, proc: Path, t: float) -> bytes:
    jobs = running_jobs(FAULTS[node], t, NODES[node])
    JobProcs(proc / node).write(jobs, _uuids(node))
    on_gpus = [(g, pid) for g in range(NODES[node]) for pid in gpu_pids(jobs, g)]
    found = attribute(str(proc / node), on_gpus, _uuids(node))
    body = JobWatch().body(t, found)
    assert body is not None
    return json.dumps(jobs_message(T0 + t, body)).encode()


def _history(data_dir: Path, proc: Path) -> None:
    answers = [
        j
        for node in NODES
        for j in parse_jobs(squeue_answer(running_jobs(FAULTS[node], 0.0, 8), node, T0), 100)
    ]
    metadata = SlurmMetadata(JobsSection(), _no_login_node)
    metadata.remember(answers)
    live = LiveJobs(describe=describer(metadata))
    for node in NODES:
        message = decode_line(_agent_line(node, proc, 0.0))
        assert isinstance(message, Jobs)
        live.ingest(node, message, T0)
    JobHistoryWriter(data_dir).flush(live.current(), T0 + 7200)
    xid = {"ts": DAY + timedelta(hours=1), "node": "node-003", "gpu": 5, "uuid": "",
           "kind": "xid", "code": 79, "detail": ""}  # fmt: skip
    write_atomic(
        partition_dir(data_dir, EVENTS, DAY.date()) / "e.parquet",
        pl.DataFrame([xid], schema=SCHEMAS[EVENTS]),
    )
    minutes = [
        {"ts": DAY + timedelta(minutes=m), "node": "node-006", "gpu": g, "uuid": "",
         "util_mean": 0.0, "util_max": 0, "sm_active_mean": 0.0, "mem_used_mean_bytes": 0,
         "power_mean_w": 70.0, "power_max_w": 70.0, "temp_max_c": 30, "verdict": "ok",
         "samples": 60, "util_samples": 60}
        for g in (0, 1)
        for m in range(60)
    ]  # fmt: skip
    write_atomic(
        partition_dir(data_dir, GPU_MINUTES, DAY.date()) / "m.parquet",
        pl.DataFrame(minutes, schema=SCHEMAS[GPU_MINUTES]),
    )


def test_the_xid_lists_the_simulated_job_and_idle_hours_go_to_its_user(tmp_path: Path) -> None:
    _history(tmp_path / "data", tmp_path / "proc")
    period = ReportPeriod(
        tmp_path / "data", DAY, DAY + timedelta(days=1), ContractSection(gpu_hour_price=Decimal(3))
    )
    data = jobs_section(period).to_json()
    (incident,) = data["incidents"]
    assert incident["detail"].startswith("XID 79")
    assert incident["jobs"] == [
        {"job": "4242", "user": "alice", "account": "nlp", "name": "pretrain", "gpus": 8,
         "lost_gpu_hours": "8.000"}
    ]  # fmt: skip
    assert data["idle"]["user"][0] == {
        "user": "bob", "idle_gpu_hours": "2.000", "held_gpu_hours": "2.000", "cost": "6.00"
    }  # fmt: skip
