"""The demo's fleet: simulated nodes on loopback, reached through the real SSH client path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from collectors.demo.fleet import SimulatedFleet
from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget


@dataclass
class DemoFleet:
    """A started loopback fleet and what an :class:`~collectors.ssh.SshFleet` needs for it.

    The targets trust exactly the host key the demo generated (through its
    known_hosts file): host keys are verified as for any fleet.
    """

    loopback: SimulatedFleet
    targets: list[NodeTarget]
    options: SshOptions

    async def stop(self) -> None:
        """Stop the simulated nodes (their agents get SIGTERM and say bye)."""
        await self.loopback.stop()


async def start_demo_fleet(
    nodes: int = 16, gpus: int = 8, scenario: Path | None = None, seed: int = 0
) -> DemoFleet:
    """Start ``nodes`` simulated nodes running the real agent over SSH on 127.0.0.1.

    Args:
        nodes: how many nodes (``node-001`` ...).
        gpus: GPUs per node.
        scenario: the fault scenario TOML; ``None`` is the simulator's demo scenario.
        seed: seed of the simulated workloads.
    """
    loopback = SimulatedFleet(nodes, gpus, scenario=scenario, seed=seed)
    await loopback.start()
    # The user's ~/.ssh/config must not redirect 127.0.0.1 ports; retries stay short so
    # a scenario's node_unreachable window ends visibly on time.
    options = SshOptions(ssh_config=None, connect_timeout=5.0, backoff_cap=4.0)
    return DemoFleet(loopback, loopback.targets(), options)
