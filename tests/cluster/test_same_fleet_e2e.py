"""One collector and three shards over the same simulated nodes (same scenario and seed,
at the same time), on a real nats-server: the attached view's ``--json-out`` equals the
single process's node by node, up to timing, and its event log holds each transition once.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from cluster.attach import AttachedFleet
from fleet.event_log import SessionLog
from fleet.facade import FleetFacade
from fleet.model import FleetSnapshot
from gpufleet.attach import write_json
from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.cluster.conftest import EXPECTED_STATE, INTERVAL, SCENARIO, ShardedFleet

pytestmark = pytest.mark.e2e

# Readings and times move between two collectors' samples of the same GPU: compared as
# "there is a value" on both sides, never as N/A on one of them.
READINGS = ("util_gpu", "mem_used_bytes", "power_w", "temp_c", "since")
NODE_TIMES = ("last_seen", "state_since")


async def until(
    fleet: FleetFacade, condition: Callable[[FleetSnapshot], bool], within_s: float
) -> None:
    """Return once a snapshot of ``fleet`` satisfies ``condition``; fail after ``within_s``."""
    met = asyncio.Event()

    def check(snapshot: FleetSnapshot) -> None:
        if condition(snapshot):
            met.set()

    unsubscribe = fleet.subscribe(check)
    try:
        await asyncio.wait_for(met.wait(), within_s)
    except TimeoutError:
        raise AssertionError(f"not within {within_s} s: {describe(fleet.latest())}") from None
    finally:
        unsubscribe()


def describe(snapshot: FleetSnapshot | None) -> str:
    if snapshot is None:
        return "no snapshot"
    nodes = [
        (n.name, n.state, [g.verdict for g in n.gpus], [g.temp_c for g in n.gpus][:2])
        for n in snapshot.nodes
    ]
    return f"{nodes}; utilization {snapshot.utilization}; sla {snapshot.sla}"


def settled(snapshot: FleetSnapshot) -> bool:
    if {n.name: n.state for n in snapshot.nodes} != EXPECTED_STATE:
        return False
    lost = snapshot.node("node-002")
    util = snapshot.utilization
    return (
        lost is not None
        and lost.gpus[3].verdict == "lost"
        and "XID 79" in " ".join(lost.broken_reasons)
        and {"xid", "gpu_lost"} <= {e.kind for e in lost.events}
        and util.avg_1h is not None
        and snapshot.sla is not None
        and all(g.temp_c is not None for n in snapshot.nodes[:4] for g in n.gpus if not g.lost)
    )


def timing_free(document: dict[str, Any]) -> dict[str, Any]:
    """The JSON with each reading and time replaced by whether it is there."""
    nodes = {}
    for node in document["nodes"]:
        for key in NODE_TIMES:
            node[key] = node[key] is not None
        for event in node["events"]:  # each collector's agent saw it a moment apart
            event["t"] = event["t"] is not None
        node["events"].sort(key=lambda e: (e["kind"], e["detail"]))  # an XID and its NVML
        # error land in either order, as each agent session happens to read them
        for item in (*node["gpus"], *node["ports"], *node["nics"]):
            for key in READINGS:
                if key in item:
                    item[key] = item[key] is not None
        nodes[node["name"]] = node
    util, sla = document["utilization"], document["sla"]
    return {
        "utilization": {k: v is not None for k, v in util.items()},
        # Each side judges the month on its own schedule: the figure is timing too.
        "sla": None if sla is None else sla["month"],
        "nodes": nodes,
    }


@pytest.fixture
async def loopback(tmp_path: Path) -> AsyncIterator[LoopbackFleet]:
    """The shared scenario with its XID later: four collectors' agents (the single one
    and three shards) must all stream before it, or one of them never sees it."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO.replace('at = "10s"', 'at = "30s"'))
    async with LoopbackFleet(nodes=5, gpus=8, scenario=scenario, seed=3) as lf:
        yield lf


async def test_three_shards_show_the_fleet_one_collector_shows(
    sharded: ShardedFleet, tmp_path: Path
) -> None:
    url = sharded.config.cluster.nats_url
    assert url is not None
    single = FleetRuntime(sharded.config, sharded.targets, data_dir=tmp_path / "single")
    viewer = AttachedFleet(url, tick_s=INTERVAL, sla_refresh_s=1.0)
    log = SessionLog()

    def observe(snapshot: FleetSnapshot) -> None:
        log.observe(snapshot)

    viewer.subscribe(observe)
    await single.start()
    await viewer.start()
    try:
        await until(single, settled, 90)
        await until(viewer, settled, 60)
        one, three = single.latest(), viewer.latest()
        assert one is not None and three is not None
        write_json(tmp_path / "one.json", one)
        write_json(tmp_path / "three.json", three)
    finally:
        await viewer.stop()
        await single.stop()
    one_doc = timing_free(json.loads((tmp_path / "one.json").read_text()))
    three_doc = timing_free(json.loads((tmp_path / "three.json").read_text()))
    for name in EXPECTED_STATE:
        assert three_doc["nodes"][name] == one_doc["nodes"][name], name
    assert three_doc["utilization"] == one_doc["utilization"]
    assert three_doc["sla"] == one_doc["sla"]
    # The lost GPU is one entry of the attached event log, not one per tick (an XID may
    # show it failing a tick before its sample shows it lost: a transition of its own).
    gpu = [e.verdict for e in log.entries if e.kind == "gpu" and e.node == "node-002"]
    assert gpu.count("lost") == 1 and gpu[-1] == "lost"
    assert all(a != b for a, b in itertools.pairwise(gpu)), gpu
