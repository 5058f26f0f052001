"""The jobs each SLA outage hit, for the claim bundle (``evidence/jobs_hit.json``).

An outage is node-wide: every job on the node when it began was hit, with the lost
GPU-hours of :func:`ledger.jobs.hits.jobs_hit`.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from fleet.settings.jobs_section import JobsSection
from history.jobs import read_job_history
from ledger.jobs.hits import Incident, jobs_hit
from ledger.jobs.report import HOURS


def outages_jobs_hit(
    outages: list[dict[str, Any]], data_dir: Path, settings: JobsSection | None = None
) -> list[dict[str, Any]]:
    """Per outage (the SLA report's JSON rows: ``node``, ``start`` as ISO 8601), the jobs hit."""
    settings = settings or JobsSection()
    ckpt = settings.checkpoint_interval_minutes
    checkpoint_ms = None if ckpt is None else int(ckpt * 60_000)
    jobs = read_job_history(data_dir)
    out = []
    for outage in outages:
        at_ms = int(
            datetime.fromisoformat(outage["start"].replace("Z", "+00:00")).timestamp() * 1000
        )
        hits = jobs_hit(Incident("outage", outage["node"], None, at_ms, ""), jobs, checkpoint_ms)
        out.append(
            {
                "node": outage["node"],
                "start": outage["start"],
                "jobs": [
                    {
                        "job": h.job,
                        "user": h.user,
                        "account": h.account,
                        "name": h.name,
                        "gpus": h.gpus,
                        "lost_gpu_hours": str(h.lost_gpu_hours.quantize(HOURS)),
                    }
                    for h in hits
                ],
            }
        )
    return out


def jobs_hit_file(
    outages: list[dict[str, Any]], data_dir: Path, settings: JobsSection | None = None
) -> bytes:
    """``evidence/jobs_hit.json`` of the claim bundle."""
    return (json.dumps(outages_jobs_hit(outages, data_dir, settings), indent=2) + "\n").encode()
