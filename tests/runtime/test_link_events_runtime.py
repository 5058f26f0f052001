"""A port the simulated fleet takes down shows up in the events table and on its node."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.runtime.waits import wait_for_snapshot

# The port goes down once the agent streams (the runtime's baseline is the port up),
# and comes back when the fault ends.
SCENARIO = """
gpus = 2

[[fault]]
kind = "ib_link_down"
node = "node-001"
port = 3
at = "6s"
until = "10s"
"""


async def test_a_simulated_link_down_is_recorded_as_events(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    config = parse_config(
        {
            "fleet": {"hosts": ["node-001"], "interval": 0.5, "slow_interval": 1.0},
            "probes": {"probe_python": sys.executable},
        }
    )
    async with LoopbackFleet(nodes=1, gpus=2, scenario=scenario, seed=3) as lf:
        runtime = FleetRuntime(
            config, lf.targets(interval=0.5, slow_interval=1.0), data_dir=tmp_path / "data"
        )
        await runtime.start()
        try:
            snap = await wait_for_snapshot(
                runtime,
                lambda s: (
                    (n := s.node("node-001")) is not None
                    and any(e.kind == "link_up" for e in n.events)
                ),
                within_s=60.0,
            )
        finally:
            await runtime.stop()
    node = snap.node("node-001")
    assert node is not None
    shown = [(e.kind, e.detail) for e in node.events if e.kind.startswith("link")]
    assert ("link_down", "mlx5_3/1 state DOWN, phys_state Polling") in shown
    assert shown[-1] == ("link_up", "mlx5_3/1 up")
    events = pl.read_parquet(tmp_path / "data" / "events" / "**" / "*.parquet")
    links = events.filter(pl.col("kind").str.starts_with("link")).sort("ts")
    assert links["kind"].to_list()[0] == "link_down"
    assert {"link_down", "link_downed", "link_up"} <= set(links["kind"].to_list())
    assert set(links["node"].to_list()) == {"node-001"}
    assert runtime.link_events.counts["link_down"] >= 1
