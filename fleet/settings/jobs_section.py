"""[jobs] which scheduler jobs ran on each GPU (docs/jobs.md)."""

from __future__ import annotations

from pydantic import Field

from fleet.settings.base import Section


class JobsSection(Section):
    """[jobs] job attribution: the node agent maps GPUs to jobs; metadata from Slurm."""

    enabled: bool = True
    """Attribute GPUs to Slurm jobs and Kubernetes pods from each node's cgroups."""
    refresh_s: float = Field(default=300.0, ge=10.0, le=86_400.0)
    """The agent re-sends its unchanged job list this often, s (a change is sent at
    once, on the agent's slow interval)."""
    login_node: str | None = Field(default=None, max_length=255, pattern=r"^[A-Za-z0-9._-]+$")
    """Slurm login node the controller asks for job names, accounts and partitions
    (`squeue --json` over SSH, host key verified). Unset: jobs carry only what the node
    sees (job id, step, user)."""
    login_user: str | None = Field(default=None, max_length=64, pattern=r"^[A-Za-z0-9._-]+$")
    """SSH user on the login node; unset: as in `~/.ssh/config`, else the local user."""
    login_port: int = Field(default=22, ge=1, le=65535)
    """SSH port of the login node."""
    slurm_conf: str | None = Field(default=None, max_length=1024, pattern=r"^/[^\x00-\x1f]*$")
    """`SLURM_CONF` on the login node, for a cluster whose config is not the default."""
    metadata_every_s: float = Field(default=60.0, ge=5.0, le=86_400.0)
    """How often the controller asks the login node, s; between asks, answers are
    served from the cache."""
    metadata_jobs: int = Field(default=20_000, ge=1, le=1_000_000)
    """Most jobs whose metadata the cache keeps (oldest answers dropped first)."""
    query_timeout_s: float = Field(default=30.0, gt=0.0, le=600.0)
    """A query that has not answered in this many seconds is abandoned."""
    max_output_mib: int = Field(default=64, ge=1, le=1024)
    """A query answer longer than this is refused whole, MiB."""
    checkpoint_interval_minutes: float | None = Field(default=None, gt=0.0, le=525_600.0)
    """How often jobs checkpoint, min: a failure costs a job at most this much work per
    GPU. Unset: the work since the job began is lost."""
