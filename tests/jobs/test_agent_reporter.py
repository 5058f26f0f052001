"""The agent's ``jobs`` reporter through pynvml (the simulator's library installed in it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from collectors import sim
from collectors.agent.jobs import JobReporter
from collectors.sim.workload import NodeWorkload

SEED = 7


@pytest.fixture
def node(tmp_path: Path) -> Iterator[sim.SimNode]:
    """node-001 at t=0 of seed 7, installed in this process's pynvml."""
    clock = sim.ManualClock(0.0)
    installed = sim.install(
        "node-001", None, seed=SEED, sysfs_root=tmp_path / "sys", clock=clock, refresh_s=None
    )
    pynvml.nvmlInit()
    try:
        yield installed
    finally:
        pynvml.nvmlShutdown()
        installed.close()


def test_nvml_processes_in_a_slurm_cgroup_become_a_jobs_message(
    node: sim.SimNode, tmp_path: Path
) -> None:
    segment = NodeWorkload(SEED, "node-001", 8).segment_at(0.0)
    assert segment.gpus, "seed 7 starts node-001 with a job running"
    proc = tmp_path / "proc"
    entry = proc / str(segment.pid)
    entry.mkdir(parents=True)
    (entry / "cgroup").write_text("0::/system.slice/slurmstepd.scope/job_5150/step_0/user/task_0\n")
    (entry / "status").write_text("Name:\tpython3\nUid:\t0\t0\t0\t0\n")
    reporter = JobReporter(str(proc), refresh_s=300.0)
    message = reporter.poll(100.0)
    assert message is not None and message["type"] == "jobs" and message["schema"] == 1
    assert {(e["gpu"], e["job"], e["step"], e["via"]) for e in message["jobs"]} == {
        (gpu, "5150", "0", "nvml") for gpu in segment.gpus
    }
    assert all(e["uuid"].startswith("GPU-") for e in message["jobs"])
    assert reporter.poll(110.0) is None  # unchanged, not due
    (entry / "cgroup").unlink()  # the process left the job (as if it exited)
    assert reporter.poll(120.0) == {**message, "t": 120.0, "jobs": []}
