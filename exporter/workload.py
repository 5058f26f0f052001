"""``gpufleet_gpu_workload_info``: which job runs on which GPU, as its own info series.

One series per (GPU, job), value 1, present while the job is on the GPU and gone in the
first scrape after it ends. No other family carries a job label: a job label on every
GPU metric multiplies the stored series by the number of jobs a GPU sees, so a query
joins on ``uuid`` instead (``... * on(uuid) group_left(job, user)
gpufleet_gpu_workload_info``). Several steps of one job on a GPU are one series.
"""

from __future__ import annotations

from collections.abc import Iterable

from exporter.families import gauge, label_pairs
from fleet.jobs import JobInterval

WORKLOAD_INFO = gauge(
    "gpufleet_gpu_workload_info",
    "A scheduler job (Slurm job id, or Kubernetes pod UID) using the GPU; 1 while it runs",
    ("node", "gpu", "uuid", "job", "user"),
)


def workload_series(intervals: Iterable[JobInterval]) -> list[tuple[str, ...]]:
    """The label values of each series, one per (GPU, job), sorted."""
    return sorted({(i.node, str(i.gpu), i.uuid, i.job, i.user) for i in intervals})


def render_workload(intervals: Iterable[JobInterval]) -> str:
    """The family's text (HELP, TYPE and one line per GPU and job), sorted by labels."""
    series = workload_series(intervals)
    name = WORKLOAD_INFO.name
    lines = [WORKLOAD_INFO.header()]
    lines.extend(f"{name}{{{label_pairs(WORKLOAD_INFO.labels, labels)}}} 1\n" for labels in series)
    return "".join(lines)
