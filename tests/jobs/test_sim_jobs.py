"""Simulated Slurm jobs go through the agent's real attribution path and the metadata parser."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

from collectors.agent.jobs import attribute
from collectors.sim.jobs import JobProcs, gpu_pids, running_jobs, squeue_answer
from collectors.sim.scenario import Fault
from ledger.jobs.slurm_meta import parse_jobs

UUIDS = [f"GPU-{i:08x}-0000-1111-2222-333344445555" for i in range(4)]


def _job(gpu: int | None, at: float, until: float, **params: object) -> tuple[Fault, float]:
    fault = Fault("job", "node-001", gpu, None, at, until, MappingProxyType(dict(params)))
    return fault, until


FAULTS = [
    _job(0, 0.0, 600.0, id=4242, user="alice", account="nlp", name="pretrain"),
    _job(1, 0.0, 600.0, id=4242, user="alice", account="nlp", name="pretrain"),
    _job(3, 100.0, 900.0, id=77, user="bob", account="vision", idle=True),
]


def test_busy_and_idle_jobs_are_attributed_by_the_agent_code(tmp_path: Path) -> None:
    jobs = running_jobs(FAULTS, 200.0, gpu_count=4)
    procs = JobProcs(tmp_path)
    procs.write(jobs, UUIDS)
    on_gpus = [(g, pid) for g in range(4) for pid in gpu_pids(jobs, g)]
    found = attribute(str(tmp_path), on_gpus, UUIDS)
    assert [(e["gpu"], e["job"], e["via"], e["uid"]) for e in found] == [
        (0, "4242", "nvml", jobs[1].uid),
        (1, "4242", "nvml", jobs[1].uid),
        (3, "77", "env", jobs[0].uid),  # idle: allocated (UUIDs in CUDA_VISIBLE_DEVICES)
    ]
    # The busy job ends: its entry goes, as the kernel removes an exited process's.
    procs.write(running_jobs(FAULTS, 700.0, gpu_count=4), UUIDS)
    assert sorted(p.name for p in tmp_path.iterdir()) == [str(jobs[0].pid)]


def test_the_simulated_login_node_answers_as_slurm_does() -> None:
    jobs = running_jobs(FAULTS, 200.0, gpu_count=4)
    answer = parse_jobs(squeue_answer(jobs, "node-001", 1_767_225_600.0), 10)
    assert [(j.job, j.name, j.user, j.account, j.start) for j in answer] == [
        ("77", "train", "bob", "vision", 1_767_225_700.0),
        ("4242", "pretrain", "alice", "nlp", 1_767_225_600.0),
    ]
