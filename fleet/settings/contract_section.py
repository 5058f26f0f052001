"""[contract] what the provider sold, per node: read by the acceptance campaign, the
delivery ledger and the repairs ledger alike (docs/contract.md)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from fleet.settings.base import Section

# Login names (POSIX portable, plus the @ some directories use) and kernel process names
# (`comm`, at most 15 bytes, no control characters): both go to the agent's command line.
UserName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._][A-Za-z0-9._@-]{0,63}$")]
ProcessName = Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f/]{1,15}$")]
DeviationKind = Literal[
    "usable_memory", "power_limit", "pcie_gen", "pcie_width", "nvlink_up", "gpu_model",
    "gpu_count", "driver", "network_ports", "network_rate",
]  # fmt: skip


class ContractSection(Section):
    """[contract] the hardware and terms the provider contracted, per node."""

    gpu_model: str | None = Field(default=None, max_length=128)
    """GPU model as NVML names it (a case-insensitive substring, e.g. `H100 80GB HBM3`);
    unset: not judged."""
    gpus_per_node: int = Field(default=8, ge=1, le=1024)
    """GPUs every node must have."""
    usable_memory_gib: float | None = Field(default=None, gt=0)
    """Least GPU memory the renter may use per GPU, GiB (e.g. 79 of 80); memory held by
    processes that are not the renter's counts against it. Unset: not judged."""
    power_limit_w: float | None = Field(default=None, gt=0)
    """Enforced power limit every GPU must have, W (e.g. 700). Unset: not judged."""
    pcie_gen: int | None = Field(default=None, ge=1, le=7)
    """PCIe generation every GPU's link must run at (e.g. 5). Unset: not judged."""
    pcie_width: int | None = Field(default=None, ge=1, le=32)
    """PCIe link width every GPU must run at (e.g. 16). Unset: not judged."""
    nvlinks_up: int | None = Field(default=None, ge=0, le=255)
    """NVLink links every GPU must have up (18 on an H100 SXM). Unset: not judged."""
    network_ports: int | None = Field(default=None, ge=0, le=4096)
    """InfiniBand / RoCE / EFA ports every node must have active. Unset: not judged."""
    network_rate_gbps: float | None = Field(default=None, gt=0)
    """Line rate of each of those ports, Gb/s (e.g. 400). Unset: not judged."""
    driver_min: str | None = Field(default=None, pattern=r"^\d+(\.\d+)*$")
    """Oldest NVIDIA driver allowed, e.g. `550.54`. Unset: no lower bound."""
    driver_max: str | None = Field(default=None, pattern=r"^\d+(\.\d+)*$")
    """Newest NVIDIA driver allowed, e.g. `570.999`. Unset: no upper bound."""
    gpu_hour_price: Decimal | None = Field(default=None, ge=0)
    """Price of one GPU-hour in `currency`; unset: money is not shown."""
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    """Currency of every price (ISO 4217)."""
    repair_within_hours: float | None = Field(default=None, gt=0)
    """The provider's promise: a broken node or GPU is repaired or replaced within this
    many hours of being reported. Unset: no repair term is checked."""
    fast_replacements_per_month: int | None = Field(default=None, ge=0)
    """Replacements the provider promises per month within `repair_within_hours`."""
    renter_users: tuple[UserName, ...] = Field(default=(), max_length=256)
    """Users whose GPU processes are the renter's (e.g. `["alice", "slurm"]`). A process
    of any other user, not in `renter_processes`, is the provider's: its memory counts
    against `usable_memory_gib` and its load is `provider` time. Empty together with
    `renter_processes`: every process is the renter's."""
    renter_processes: tuple[ProcessName, ...] = Field(default=(), max_length=256)
    """Process names (as `/proc/<pid>/comm` gives them) that are the renter's whoever runs
    them, e.g. `["python3", "torchrun"]`."""
    working_floor_percent: float = Field(default=5.0, ge=0, le=100)
    """A GPU-minute is `working` when its mean SM activity (GPU utilization where SM
    activity is not reported) is at least this, %. The default 5 % is a judgment: GPU
    utilization overstates work, SM activity near 0 means nothing runs."""
    idle_min_minutes: int = Field(default=10, ge=1, le=1440)
    """A stretch below the floor is `idle` only when it lasts at least this many
    minutes; shorter pauses inside a job count as `working`."""
    deviation_credits: dict[DeviationKind, Decimal] = Field(default_factory=dict)
    """Credit per GPU-hour of a deviation from the contract, in `currency`, by deviation
    kind, e.g. `{ usable_memory = 0.50, power_limit = 1.00 }`. Kinds: `usable_memory`,
    `power_limit`, `pcie_gen`, `pcie_width`, `nvlink_up`, `gpu_model` (per GPU);
    `gpu_count` (the GPUs missing), `driver` (every GPU of the node), `network_ports` and
    `network_rate` (each port's share of the node's GPUs: `gpus_per_node /
    network_ports`). A kind not listed is shown in GPU-hours without money."""


def renter_agent_args(contract: ContractSection | None) -> tuple[str, ...]:
    """The agent's ``--renter-user``/``--renter-process`` options for ``contract``."""
    if contract is None:
        return ()
    args: list[str] = []
    for user in contract.renter_users:
        args += ["--renter-user", user]
    for name in contract.renter_processes:
        args += ["--renter-process", name]
    return tuple(args)
