"""[acceptance] thresholds of the acceptance campaign (docs/acceptance.md).

Each default names where it comes from in its docstring; docs/acceptance.md repeats
them in a table that the tests read back, so the two cannot drift.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fleet.settings.base import Section
from probes.verdicts import DEFAULT_STRAGGLER_FRACTION

FabricDenominator = Literal["contract", "measured"]


class AcceptanceSection(Section):
    """[acceptance] how a campaign judges each stage; defaults name their source."""

    node_allreduce_h100_gbps: float = Field(default=460.0, gt=0)
    """Least single-node all-reduce bus bandwidth of an 8-GPU H100 node, GB/s. Source:
    Azure HPC health checks (aznhc) `conf/nd96isr_h100_v5.conf`, NCCL all-reduce of 16 GB."""
    node_allreduce_h200_gbps: float = Field(default=431.0, gt=0)
    """Least single-node all-reduce bus bandwidth of an 8-GPU H200 node, GB/s. Source:
    aznhc `conf/nd96isr_h200_v5.conf`."""
    ib_gpudirect_gbps: float = Field(default=380.0, gt=0)
    """Least InfiniBand GPUDirect write bandwidth per HCA, Gb/s. Source: aznhc
    `conf/nd96isr_h100_v5.conf` (H100; the H200 file says 360)."""
    fabric_fraction: float = Field(default=0.8, gt=0, le=1)
    """Least inter-node all-reduce bus bandwidth at every ladder step, as a fraction of
    the denominator. Source: renters' practice (below 80 % of the theoretical figure
    means trouble); a judgment, not a vendor number."""
    fabric_denominator: FabricDenominator = "measured"
    """What `fabric_fraction` is a fraction of: `contract` (the contract's per-port
    network line rate) or `measured` (the fleet's own median 2-node figure). Source:
    NVIDIA AI Cluster Runtime users (aicr #1256): absolute floors fail on other fabrics,
    so judge against the fabric's own figure by default."""
    step_timeout_s: float = Field(default=300.0, gt=0)
    """Seconds one ladder step (one all-reduce run) may take before it counts as hung.
    Source: nccl-tests `-T` gives a run a timeout; the figure is a judgment."""
    soak_s: float = Field(default=172800.0, ge=0)
    """Default soak duration, s (48 h), when `--soak` is not given. Source: renters'
    practice, a 48-hour uninterrupted run on the exact cluster before committing."""
    straggler_fraction: float = Field(default=DEFAULT_STRAGGLER_FRACTION, gt=0, lt=1)
    """A node whose figure is this far below the fleet median is a straggler (robust
    outliers, as the probe straggler rule). Source: the probe rule's default, a judgment."""
