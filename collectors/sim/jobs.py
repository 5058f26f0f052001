"""Simulated Slurm jobs (the ``job`` kind): their processes, cgroups and scheduler answer.

A ``job`` fault runs a Slurm job on its GPU (or every GPU of the node) from ``at`` to
``until``. While it runs, the simulated node shows what a real one shows, so the
agent's attribution path is the real one:

- a process per job in the fake ``/proc``: ``cgroup`` in Slurm's cgroup v2 layout
  (``0::/system.slice/slurmstepd.scope/job_<id>/step_0/user/task_0``), ``environ`` with
  ``CUDA_VISIBLE_DEVICES`` as GPU UUIDs (Slurm 25.11's form), ``status`` with the
  user's uid, ``cmdline``;
- the fake NVML lists that process on the job's GPUs, unless the job is ``idle`` (it
  holds the GPUs without load: no process on them, as an allocation that never
  started its work looks);
- the simulated login node answers ``squeue --json`` with the job's name, user,
  account and partition (:func:`squeue_answer`; :class:`SimulatedLoginNode` for a
  whole simulated fleet).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from collectors.sim.scenario import Fault, Scenario, fault_end
from collectors.sim.workload import Segment

# Far above the workload's PIDs and the provider's, below pid_max's default (4 194 304).
PID_BASE = 3_000_000
UID_BASE = 20_000


@dataclass(frozen=True)
class SimJob:
    """One simulated Slurm job running now on this node."""

    id: int
    user: str
    account: str
    partition: str
    name: str
    idle: bool
    gpus: tuple[int, ...]
    start: float  # seconds after the node's start

    @property
    def pid(self) -> int:
        """The job's process (deterministic: one per job id)."""
        return PID_BASE + self.id % 1_000_000

    @property
    def uid(self) -> int:
        """The user's uid (deterministic from the name)."""
        return UID_BASE + zlib.crc32(self.user.encode()) % 10_000

    def cgroup(self) -> str:
        """``/proc/<pid>/cgroup`` of the job's process (cgroup v2)."""
        return f"0::/system.slice/slurmstepd.scope/job_{self.id}/step_0/user/task_0\n"


def running_jobs(faults: Iterable[tuple[Fault, float]], t: float, gpu_count: int) -> list[SimJob]:
    """The ``job`` faults that hold at ``t`` (``(fault, end)`` pairs), by job id."""
    jobs: dict[int, SimJob] = {}
    for fault, end in faults:
        if fault.kind != "job" or not fault.at <= t < end:
            continue
        params = fault.params
        ident = int(params.get("id", 1000))
        gpus = tuple(range(gpu_count)) if fault.gpu is None else (fault.gpu,)
        known = jobs.get(ident)
        if known is not None:  # one job on several rows (GPU 0 and GPU 3): one job
            gpus = tuple(sorted(set(known.gpus) | set(gpus)))
        jobs[ident] = SimJob(
            id=ident,
            user=str(params.get("user", "alice")),
            account=str(params.get("account", "research")),
            partition=str(params.get("partition", "gpu")),
            name=str(params.get("name", "train")),
            idle=bool(params.get("idle", False)),
            gpus=gpus,
            start=fault.at if known is None else min(known.start, fault.at),
        )
    return [jobs[ident] for ident in sorted(jobs)]


def job_segment(job: SimJob) -> Segment:
    """The load a busy job puts on its GPUs: a training run (level, memory and tensor
    share in the upper part of the workload's training ranges), checkpoints every 10 min."""
    return Segment(
        start=job.start,
        end=math.inf,
        gpus=frozenset(job.gpus),
        level=0.93,
        memory=0.8,
        sm_ratio=0.75,
        tensor_ratio=0.55,
        checkpoint_every=600.0,
        pid=job.pid,
    )


def gpu_pids(jobs: Sequence[SimJob], gpu: int) -> list[int]:
    """The PIDs the fake NVML lists on ``gpu``: each busy job's process."""
    return [job.pid for job in jobs if gpu in job.gpus and not job.idle]


class JobProcs:
    """Keeps a fake ``/proc`` holding one entry per running job, and only those."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._written: dict[int, SimJob] = {}

    def write(self, jobs: Sequence[SimJob], uuids: Sequence[str]) -> None:
        """Bring the tree to ``jobs``: new entries written, ended ones removed."""
        wanted = {job.pid: job for job in jobs}
        for pid in set(self._written) - set(wanted):
            _remove(self.root / str(pid))
        for pid, job in wanted.items():
            if self._written.get(pid) != job:
                _write_job(self.root / str(pid), job, uuids)
        self._written = wanted

    @property
    def written(self) -> bool:
        """True while the tree holds a job's entry."""
        return bool(self._written)


def _write_job(entry: Path, job: SimJob, uuids: Sequence[str]) -> None:
    entry.mkdir(parents=True, exist_ok=True)
    visible = ",".join(uuids[g] for g in job.gpus if g < len(uuids))
    env = {
        "SLURM_JOB_ID": str(job.id),
        "SLURM_JOB_USER": job.user,
        "SLURM_JOB_ACCOUNT": job.account,
        "SLURM_JOB_PARTITION": job.partition,
        "CUDA_VISIBLE_DEVICES": visible,
    }
    argv = ["python3", "-m", "torch.distributed.run", "train.py", "--job-name", job.name]
    _replace(entry / "environ", b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))
    _replace(entry / "cgroup", job.cgroup().encode())
    _replace(entry / "cmdline", b"\0".join(w.encode() for w in argv) + b"\0")
    status = f"Name:\tpython3\nPid:\t{job.pid}\nUid:\t{job.uid}\t{job.uid}\t{job.uid}\t{job.uid}\n"
    _replace(entry / "status", status.encode())


def _replace(path: Path, data: bytes) -> None:
    # Replace, never truncate in place: the agent may be reading the file right now.
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


def _remove(entry: Path) -> None:
    for name in ("environ", "cgroup", "cmdline", "status"):
        (entry / name).unlink(missing_ok=True)
    # Something else (the workload's writer) may also keep files there.
    with contextlib.suppress(OSError):
        entry.rmdir()


def squeue_answer(jobs: Sequence[SimJob], node: str, started_at: float) -> bytes:
    """What ``squeue --json`` on a simulated login node answers (Slurm 22.05's shape).

    Args:
        started_at: the node's start, epoch seconds (job starts are relative to it).
    """
    return _squeue_json([(job, node) for job in jobs], started_at)


def _squeue_json(jobs: Iterable[tuple[SimJob, str]], started_at: float) -> bytes:
    return json.dumps(
        {
            "jobs": [
                {
                    "job_id": job.id,
                    "name": job.name,
                    "user_name": job.user,
                    "user_id": job.uid,
                    "account": job.account,
                    "partition": job.partition,
                    "job_state": "RUNNING",
                    "nodes": nodes,
                    "start_time": int(started_at + job.start),
                    "end_time": 0,
                }
                for job, nodes in jobs
            ]
        }
    ).encode()


class SimulatedLoginNode:
    """The Slurm login node of a simulated fleet: answers ``squeue --json`` (and only
    that) with the jobs its scenario runs now on every node.

    It is called as the controller's login-node runner (argv in, the answer's bytes
    out), in the process that runs the simulation, so no SSH is involved: the demo's
    nodes are reached over SSH, its login node is not.

    Args:
        scenario: the fleet's scenario.
        epoch: the fleet's start, epoch seconds (scenario times count from it).
        gpus: GPUs per node.
        nodes: the fleet's node names.
        clock: Unix time.
    """

    def __init__(
        self,
        scenario: Scenario,
        epoch: float,
        gpus: int,
        nodes: Sequence[str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._faults: Mapping[str, list[tuple[Fault, float]]] = {
            node: [
                (f, fault_end(scenario, f)) for f in scenario.faults_for(node) if f.kind == "job"
            ]
            for node in nodes
        }
        self._epoch = epoch
        self._gpus = gpus
        self._clock = clock
        self.asked = 0

    async def __call__(self, argv: Sequence[str]) -> bytes:
        if list(argv[-2:]) != ["squeue", "--json"]:
            raise ValueError(f"the simulated login node runs squeue --json only, not {argv!r}")
        self.asked += 1
        return self.answer(self._clock())

    def answer(self, now: float) -> bytes:
        """``squeue --json`` at ``now``: each running job once, with its nodes."""
        t = now - self._epoch
        on: dict[int, tuple[SimJob, list[str]]] = {}
        for node, faults in self._faults.items():
            for job in running_jobs(faults, t, self._gpus):
                on.setdefault(job.id, (job, []))[1].append(node)
        return _squeue_json(((job, ",".join(n)) for job, n in on.values()), self._epoch)
