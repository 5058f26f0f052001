"""``gpufleet demo --accept [--soak D]``: a short campaign on the simulated fleet.

Eight simulated nodes with 2 GPUs each over real SSH on loopback, the kernels on the
CPU, with one fault for each stage (``collectors/sim/scenarios/accept.toml``): the
campaign rejects those nodes with their evidence and accepts the others. The report
goes into the data directory; the exit status is the campaign's.
"""

from __future__ import annotations

import sys
import tempfile
from importlib import resources
from pathlib import Path

from collectors.demo import start_demo_fleet
from gpufleet.accept_campaign import accept
from gpufleet.config import Config, parse_config

DEMO_NODES, DEMO_GPUS = 8, 2
DEMO_SOAK_S = 20.0


def accept_scenario_path() -> Path:
    """The acceptance demo's scenario shipped with the package."""
    return Path(str(resources.files("collectors.sim").joinpath("scenarios/accept.toml")))


def demo_accept_config() -> Config:
    """Contract of 2 GPUs per node; probes with this Python; CPU-sized fabric steps."""
    return parse_config(
        {
            "contract": {"gpus_per_node": DEMO_GPUS, "gpu_hour_price": "2.50"},
            "probes": {"probe_python": sys.executable},
            # Kernels of eight nodes share this machine's cores: a healthy simulated GPU
            # can lose 15 % to a neighbour, the slow one is 4x slow.
            "acceptance": {"straggler_fraction": 0.5, "step_timeout_s": 60.0},
        },
        source="<demo --accept>",
    )


async def run_demo_accept(data_dir: Path | None, soak_s: float | None) -> int:
    """Start the simulated fleet, run the campaign, stop the fleet; the campaign's status."""
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="gpufleet-accept-"))
    demo = await start_demo_fleet(DEMO_NODES, DEMO_GPUS, accept_scenario_path())
    try:
        soak = DEMO_SOAK_S if soak_s is None else soak_s
        status = await accept(
            demo_accept_config(), demo.targets, demo.options, data_dir, soak, probe_concurrency=2
        )
    finally:
        await demo.stop()
    print(f"gpufleet demo --accept: reports in {data_dir / 'campaign'}", file=sys.stderr)
    return status
