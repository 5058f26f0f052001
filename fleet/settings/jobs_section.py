"""[jobs] which scheduler jobs ran on each GPU (docs/jobs.md)."""

from __future__ import annotations

from fleet.settings.base import Section


class JobsSection(Section):
    """[jobs] job attribution: the node agent maps GPUs to jobs; metadata from Slurm."""
