"""Three shards over one simulated fleet with faults, on a real nats-server; viewers attach."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from fleet.cluster.attach import AttachedFleet
from fleet.model import FleetSnapshot
from tests.cluster.conftest import EXPECTED_STATE, INTERVAL, ShardedFleet, wait_until

pytestmark = pytest.mark.e2e


@contextlib.asynccontextmanager
async def attached(url: str) -> AsyncIterator[AttachedFleet]:
    viewer = AttachedFleet(url, tick_s=INTERVAL, read_only=True)
    await viewer.start()
    try:
        yield viewer
    finally:
        await viewer.stop()


def states(snapshot: FleetSnapshot | None) -> dict[str, tuple[str, str]]:
    if snapshot is None:
        return {}
    return {n.name: (n.status, n.state) for n in snapshot.nodes}


def settled(viewer: AttachedFleet) -> bool:
    snap = viewer.latest()
    if snap is None or {n.name: n.state for n in snap.nodes} != EXPECTED_STATE:
        return False
    node = snap.node("node-002")
    return node is not None and node.gpus[3].verdict == "lost"


async def test_viewers_see_every_node_kill_and_restart_a_shard(sharded: ShardedFleet) -> None:
    url = sharded.config.cluster.nats_url
    assert url is not None
    async with attached(url) as one, attached(url) as two:
        await wait_until(lambda: settled(one) and settled(two), 60, "every verdict attached")
        snap = one.latest()
        assert snap is not None
        assert [g.verdict for g in snap.nodes[1].gpus].count("lost") == 1
        assert "GPU lost" in " ".join(snap.nodes[1].gpus[3].reasons)
        port = next(p for p in snap.node("node-004").ports if p.name.startswith("mlx5_1"))  # type: ignore[union-attr]
        assert port.verdict == "fail"
        # Two viewers, one truth: the same statuses and GPU verdicts.
        await wait_until(lambda: states(one.latest()) == states(two.latest()), 10, "same view")

        # The node screen's detail comes from the owning shard over request/reply.
        one.gpu_series("node-002", 3)
        await wait_until(
            lambda: (
                (n := one.latest()) is not None
                and (d := n.node("node-002")) is not None
                and d.driver is not None
                and d.gpus[0].uuid.startswith("GPU-")
            ),
            15,
            "node detail fetched",
        )
        probe = pytest.raises(PermissionError)
        with probe:
            await one.probe("node-001")

        # Kill shard 1 (node-004): unmonitored within a few intervals, not broken.
        await sharded.stop_shard(1)
        await wait_until(
            lambda: states(one.latest()).get("node-004", ("", ""))[0] == "unmonitored",
            10 * INTERVAL + 5,
            "node-004 unmonitored",
        )
        others = {k: v for k, v in states(one.latest()).items() if k != "node-004"}
        assert all(status != "unmonitored" for status, _ in others.values())
        await sharded.start_shard(1)
        await wait_until(
            lambda: states(one.latest()).get("node-004") == ("streaming", "broken"),
            40,
            "node-004 back from its restarted shard",
        )
    assert one.malformed == 0
