"""How many simulated nodes this machine can run at 1 Hz, and the demo's warning beyond it.

Each simulated node is one agent process (the real agent over simulated NVML, 8 GPUs)
streaming over its own SSH session into this process. Measured on the 2-core
development machine (``/usr/bin/time gpufleet demo --headless --duration 30`` with 1 and
with 5 nodes): about 0.028 CPU-seconds per node-second, agent and controller together,
i.e. ~36 nodes per core at full load. Half of the machine is left for the dashboard,
history and everything else, hence 18 nodes per core.
"""

from __future__ import annotations

import os

CPU_S_PER_NODE_S = 0.028
HEADROOM = 0.5
NODES_PER_CORE = int(HEADROOM / CPU_S_PER_NODE_S)


def demo_capacity(cpus: int | None = None) -> int:
    """Simulated nodes this machine keeps at 1 Hz with room to spare."""
    cores = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(1, cores) * NODES_PER_CORE


def load_warning(nodes: int, gpus_per_node: int = 8, cpus: int | None = None) -> str | None:
    """A warning in words when ``nodes`` simulated nodes exceed this machine, else None."""
    cores = cpus if cpus is not None else (os.cpu_count() or 1)
    # The agent's cost grows with its GPUs: scale the capacity to 8-GPU nodes.
    capacity = demo_capacity(cores) * 8 // max(1, gpus_per_node)
    if nodes <= capacity:
        return None
    return (
        f"{nodes} simulated nodes need about {nodes * CPU_S_PER_NODE_S:.1f} CPU cores at 1 Hz; "
        f"this machine has {cores}, enough for about {capacity}. Expect late samples, nodes "
        f"shown stale and a sluggish dashboard; try --nodes {capacity}."
    )
