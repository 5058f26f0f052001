"""A fake ``/proc`` for the simulated workload's processes.

The fake NVML library reports each running job's PID on its GPUs; the agent's
``processes`` command then reads ``<proc_root>/<pid>/status`` and ``cmdline`` as on a
real node. This writes those two files for the job that runs now, and removes the
entry of a job that ended (as the kernel does), so the agent's code path is the
same for real and simulated nodes.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

from collectors.sim.calls_delivery import PROVIDER_ARGV
from collectors.sim.identity import stream_key
from collectors.sim.workload import NodeWorkload, Segment

_MODELS = ("llama-3-70b", "llama-3-8b", "mixtral-8x7b", "qwen2-72b", "vit-huge", "sdxl")


def job_command(seed: int, segment: Segment) -> list[str]:
    """The argv of a simulated job: a torchrun training or a vLLM server (deterministic)."""
    rng = random.Random(stream_key("cmd", seed, segment.pid))
    model = rng.choice(_MODELS)
    gpus = str(len(segment.gpus))
    if segment.level >= 0.85:  # workload.py: training jobs run at 86-99 %
        return [
            "python3",
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            gpus,
            "train.py",
            "--config",
            f"configs/{model}.yaml",
        ]
    return [
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "--tensor-parallel-size",
        gpus,
    ]


class ProcWriter:
    """Keeps ``root`` holding an entry for the job running now, and only that one."""

    def __init__(self, root: Path, seed: int, workload: NodeWorkload, uid: int) -> None:
        self.root = root
        self._seed = seed
        self._workload = workload
        self._uid = uid
        self._pid: int | None = None
        self._provider: set[int] = set()
        root.mkdir(parents=True, exist_ok=True)

    def write(self, t: float, provider: list[int] | None = None) -> None:
        """Bring the tree to time ``t``: the job running now and ``provider``'s processes."""
        self._write_job(t)
        self._write_provider(provider or [])

    def _write_job(self, t: float) -> None:
        segment = self._workload.segment_at(t)
        pid = segment.pid if segment.gpus else None
        if pid == self._pid:
            return
        if self._pid is not None:
            shutil.rmtree(self.root / str(self._pid), ignore_errors=True)
        self._pid = pid
        if pid is None:
            return
        _write_entry(self.root / str(pid), job_command(self._seed, segment), self._uid)

    def _write_provider(self, pids: list[int]) -> None:
        wanted = set(pids)
        for pid in self._provider - wanted:
            shutil.rmtree(self.root / str(pid), ignore_errors=True)
        for pid in wanted - self._provider:
            _write_entry(self.root / str(pid), PROVIDER_ARGV[pid], 0)  # root's daemons
        self._provider = wanted


def _write_entry(entry: Path, argv: list[str], uid: int) -> None:
    entry.mkdir(exist_ok=True)
    _write(entry / "cmdline", b"\0".join(w.encode() for w in argv) + b"\0")
    name = os.path.basename(argv[0])[:15]  # the kernel's comm is at most 15 characters
    status = f"Name:\t{name}\nPid:\t{entry.name}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"
    _write(entry / "status", status.encode())
    _write(entry / "comm", (name + "\n").encode())


def _write(path: Path, data: bytes) -> None:
    # Replace, never truncate in place: the agent may be reading the file right now.
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)
