"""The node screen's jobs line, drawn from a node's jobs without an app."""

from __future__ import annotations

from dataclasses import replace

from fleet.jobs import JobInterval
from fleet.model import NodeSnapshot
from tui.job_lines import gpu_ranges, jobs_line

BASE = JobInterval("n1", 0, "GPU-0", "slurm", "4242", "0", "alice", 0.0)


def _node(*jobs: JobInterval) -> NodeSnapshot:
    return NodeSnapshot(name="n1", status="streaming", jobs=jobs)


def test_gpu_ranges_fold_runs() -> None:
    assert gpu_ranges([6, 0, 1, 2, 3, 3]) == "0-3,6"
    assert gpu_ranges([5]) == "5"
    assert gpu_ranges([]) == ""


def test_one_entry_per_job_with_what_the_scheduler_said() -> None:
    named = replace(BASE, name="llama-pretrain", account="nlp", partition="h100")
    steps = [replace(named, gpu=g, step=s) for g in range(4) for s in ("0", "1")]
    bare = replace(BASE, gpu=5, job="77", user="20001")
    pod = replace(BASE, gpu=6, scheduler="k8s", job="0123456789abcdef", step="", user="")
    line = jobs_line(_node(*steps, bare, pod))
    assert line == (
        "jobs: 4242 llama-pretrain · alice · nlp/h100 · GPUs 0-3; 77 · 20001 · GPU 5; "
        "pod 01234567 · user N/A · GPU 6"
    )
    assert jobs_line(_node()) is None


def test_many_jobs_are_counted_and_long_names_cut() -> None:
    many = [replace(BASE, gpu=g, job=str(100 + g), name="x" * 60) for g in range(6)]
    line = jobs_line(_node(*many))
    assert line is not None and line.endswith("; +2 more")
    assert "x" * 39 + "…" in line and "x" * 40 not in line
