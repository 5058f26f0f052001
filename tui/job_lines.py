"""The node screen's jobs line: who runs what on the node's GPUs, in words.

The scheduler's name, user and account show where the login node answered
(docs/jobs.md); without one a job reads as its id and the user (or uid) the node saw.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.facade import NodeSnapshot
from fleet.model import JobInterval

MOST_JOBS = 4  # more than this on one node: the rest are counted, not listed
NAME_W = 40


def gpu_ranges(gpus: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 6]`` -> ``0-3,6``."""
    ordered = sorted(set(gpus))
    runs: list[list[int]] = []
    for gpu in ordered:
        if runs and gpu == runs[-1][-1] + 1:
            runs[-1].append(gpu)
        else:
            runs.append([gpu])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def jobs_line(node: NodeSnapshot) -> str | None:
    """``jobs: 4242 llama-pretrain · alice · nlp/h100 · GPUs 0-7``; None without jobs.

    A job's steps fold into one entry; a pod reads as its UID's first 8 characters.
    """
    jobs: dict[tuple[str, str], list[int]] = {}
    first: dict[tuple[str, str], JobInterval] = {}
    for interval in node.jobs:
        key = (interval.scheduler, interval.job)
        jobs.setdefault(key, []).append(interval.gpu)
        first.setdefault(key, interval)
    if not jobs:
        return None
    parts = []
    for key, gpus in list(jobs.items())[:MOST_JOBS]:
        i = first[key]
        ident = i.job if i.scheduler == "slurm" else f"pod {i.job[:8]}"
        words = [f"{ident} {_cut(i.name)}".rstrip(), i.user or "user N/A"]
        where = "/".join(w for w in (i.account, i.partition) if w)
        if where:
            words.append(where)
        ranges = gpu_ranges(gpus)
        words.append(f"GPU{'s' if len(set(gpus)) > 1 else ''} {ranges}")
        parts.append(" · ".join(words))
    more = len(jobs) - MOST_JOBS
    return "jobs: " + "; ".join(parts) + (f"; +{more} more" if more > 0 else "")


def _cut(text: str) -> str:
    return text if len(text) <= NAME_W else text[: NAME_W - 1] + "…"
