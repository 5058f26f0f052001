"""Real nats-server on loopback, a simulated fleet with faults, and shards watching it.

``ShardedFleet`` runs each shard as a FleetRuntime plus a ShardPublisher in this
process (what ``gpufleet serve --shard K/N`` runs), so a test can stop one shard and
start it again; ``tests/cluster/test_demo_shards.py`` runs them as real processes.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cluster.natsd import LocalNats, start_nats_server
from cluster.publisher import ShardPublisher
from cluster.remote_export import ShardHistoryFiles
from cluster.shards import ShardSpec
from collectors.ssh.target import NodeTarget
from gpufleet.config import Config, parse_config
from gpufleet.runtime import FleetRuntime
from gpufleet.shard import shard_config, shard_data_dir, shard_targets
from testkit.loopback.fleet import LoopbackFleet

INTERVAL = 0.5
SHARDS = 3
# With 3 shards: node-004 is shard 1's, node-001..003 shard 2's, node-005 shard 3's.
# The XID comes once every agent streams (NVML reports no event from before the agent
# registered for them, and on a loaded machine agents start seconds after the fleet).
SCENARIO = """
gpus = 8

[[fault]]
kind = "xid79"
node = "node-002"
gpu = 3
at = "10s"

[[fault]]
kind = "ib_link_down"
node = "node-004"
port = 1
at = "0s"

[[fault]]
kind = "node_unreachable"
node = "node-005"
at = "0s"
"""
EXPECTED_STATE = {
    "node-001": "up",
    "node-002": "broken",
    "node-003": "up",
    "node-004": "broken",
    "node-005": "unreachable",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: end-to-end (real servers and processes); slower, fewer of them"
    )


def cluster_config(nats_url: str, nodes: int, health: dict[str, float] | None = None) -> Config:
    return parse_config(
        {
            "health": health or {},
            "fleet": {
                "hosts": [f"node-[001-{nodes:03d}]"],
                "interval": INTERVAL,
                "slow_interval": 1.0,
            },
            "probes": {"probe_python": sys.executable},
            "sla": {
                "committed_nodes": nodes,
                "gpu_hour_price": 2,
                "grace_minutes": 0,
                "tiers": [{"below": 99.5, "credit_percent": 10}],
            },
            "cluster": {"nats_url": nats_url},
        }
    )


class ShardedFleet:
    """Shards over one loopback fleet, each with its runtime and publisher."""

    def __init__(self, config: Config, targets: list[NodeTarget], data_dir: Path) -> None:
        self.config = config
        self.targets = targets
        self.data_dir = data_dir
        self.running: dict[int, tuple[FleetRuntime, ShardPublisher]] = {}

    async def start_shard(self, index: int, count: int = SHARDS) -> None:
        spec = ShardSpec(index, count)
        runtime = FleetRuntime(
            shard_config(self.config, spec),
            shard_targets(self.targets, spec),
            data_dir=shard_data_dir(self.data_dir, spec),
        )
        url = self.config.cluster.nats_url
        assert url is not None
        publisher = ShardPublisher(
            runtime,
            spec,
            url,
            self.config.fleet.interval,
            ledger=runtime.history.sla_inputs,
            contract=self.config.sla,
            files=ShardHistoryFiles(shard_data_dir(self.data_dir, spec), runtime.history.flush),
        )
        await publisher.start()
        await runtime.start()
        self.running[index] = (runtime, publisher)

    async def stop_shard(self, index: int) -> None:
        runtime, publisher = self.running.pop(index)
        await runtime.stop()
        await publisher.stop()

    async def stop(self) -> None:
        for index in list(self.running):
            await self.stop_shard(index)


@pytest.fixture
async def nats_server(tmp_path: Path) -> AsyncIterator[LocalNats]:
    server = await start_nats_server(tmp_path / "nats")
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def loopback(tmp_path: Path) -> AsyncIterator[LoopbackFleet]:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    async with LoopbackFleet(nodes=5, gpus=8, scenario=scenario, seed=3) as lf:
        yield lf


@pytest.fixture
def fleet_config(nats_server: LocalNats) -> Config:
    """The shards' configuration (a test module may override it)."""
    return cluster_config(nats_server.url, 5)


@pytest.fixture
async def sharded(
    tmp_path: Path, fleet_config: Config, loopback: LoopbackFleet
) -> AsyncIterator[ShardedFleet]:
    config = fleet_config
    targets = loopback.targets(interval=INTERVAL, slow_interval=1.0)
    fleet = ShardedFleet(config, targets, tmp_path / "data")
    try:
        for index in range(1, SHARDS + 1):
            await fleet.start_shard(index)
        yield fleet
    finally:
        await fleet.stop()
