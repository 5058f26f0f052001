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
from cluster.natsd import LocalNats
from fleet.event_log import SessionLog
from fleet.facade import FleetFacade
from fleet.model import FleetSnapshot
from gpufleet.attach import write_json
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.cluster.conftest import (
    EXPECTED_STATE,
    INTERVAL,
    SCENARIO,
    ShardedFleet,
    cluster_config,
)

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
    return (
        f"missing {unsettled(snapshot)}; {nodes}; utilization {snapshot.utilization}; "
        f"sla {snapshot.sla}"
    )


def unsettled(snapshot: FleetSnapshot) -> list[str]:
    """What the snapshot still lacks of the scenario's settled fleet (none: settled)."""
    states = {n.name: n.state for n in snapshot.nodes}
    missing = [f"{k} {states.get(k)}" for k, v in EXPECTED_STATE.items() if states.get(k) != v]
    lost = snapshot.node("node-002")
    if lost is None or len(lost.gpus) < 4 or lost.gpus[3].verdict != "lost":
        missing.append("node-002 GPU 3 lost")
    if lost is None or "XID 79" not in " ".join(lost.broken_reasons):
        missing.append(f"XID 79 in node-002's reasons {lost and lost.broken_reasons}")
    kinds = {e.kind for e in lost.events} if lost is not None else set()
    if not {"xid", "gpu_lost"} <= kinds:
        missing.append(f"xid and gpu_lost in node-002's events {sorted(kinds)}")
    if snapshot.utilization.avg_1h is None:
        missing.append("1 h utilization")
    if snapshot.sla is None:
        missing.append("SLA")
    cold = [n.name for n in snapshot.nodes[:4] for g in n.gpus if not g.lost and g.temp_c is None]
    if cold:
        missing.append(f"temperatures of {sorted(set(cold))}")
    return missing


def settled(snapshot: FleetSnapshot) -> bool:
    return not unsettled(snapshot)


def timing_free(document: dict[str, Any]) -> dict[str, Any]:
    """The JSON with each reading and time replaced by whether it is there."""
    nodes = {}
    for node in document["nodes"]:
        for key in NODE_TIMES:
            node[key] = node[key] is not None
        for event in node["events"]:  # each collector's agent saw it a moment apart
            event["t"] = event["t"] is not None
        node["events"] = once_per_retry_reason(node["events"])
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


def once_per_retry_reason(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` with one ``connect_failed`` per reason: each collector retries an
    unreachable node on its own jittered backoff (1, 2, 4, 8 s ...), so how many attempts
    had failed when its snapshot was taken is timing; that they failed, and why, is not."""
    seen: set[str] = set()
    kept = []
    for event in events:
        if event["kind"] == "connect_failed":
            if event["detail"] in seen:
                continue
            seen.add(event["detail"])
        kept.append(event)
    return kept


@pytest.fixture
def fleet_config(nats_server: LocalNats) -> Config:
    """The shared configuration, with the warning on a port's transmit discards far above
    what the down port drops (~50/s in the simulator): a rate is a counter's step over
    the agent's sample stamps, and on a loaded machine a sample read late stretches one
    step (112/s seen), so each collector would warn on its own ticks, which is timing."""
    return cluster_config(nats_server.url, 5, health={"xmit_discards_warn_per_s": 10_000})


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
