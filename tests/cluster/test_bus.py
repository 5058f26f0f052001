"""The NATS fan-in without SSH: a publisher over hand-made snapshots, viewers on a real server."""

from __future__ import annotations

import time

import nats
import pytest

from cluster.attach import AttachedFleet
from cluster.natsd import LocalNats
from cluster.publisher import ShardPublisher
from cluster.shards import ShardSpec
from fleet.model import EventRecord, FleetSnapshot, GpuSnapshot, NodeSnapshot, NodeTransition
from testkit.static_fleet import StaticFleet
from tests.runtime.waits import wait_until


def fleet_at(t: float, lost: bool, **changes: object) -> FleetSnapshot:
    gpus = tuple(
        GpuSnapshot(i, f"GPU-a-{i}", "H100", util_gpu=40.0, verdict="ok") for i in range(8)
    )
    if lost:
        gpus = (GpuSnapshot(0, "GPU-a-0", "H100", verdict="lost", reasons=("GPU lost",)), *gpus[1:])
    node = NodeSnapshot("10.0.0.7", "streaming", state="broken" if lost else "up", gpus=gpus)
    return FleetSnapshot(taken_at=t, nodes=(node,), **changes)  # type: ignore[arg-type]


async def test_summaries_events_detail_series_and_probe_requests(nats_server: LocalNats) -> None:
    shard = StaticFleet([fleet_at(time.time(), lost=False)])
    publisher = ShardPublisher(shard, ShardSpec(2, 3), nats_server.url, interval=0.2)
    await publisher.start()
    viewer = AttachedFleet(nats_server.url, tick_s=0.2)
    await viewer.start()
    late = AttachedFleet(nats_server.url, tick_s=0.2)
    try:
        shard.push(fleet_at(time.time(), lost=False))
        await wait_until(lambda: (s := viewer.latest()) is not None and len(s.nodes) == 1, 10)
        xid = EventRecord(time.time(), "10.0.0.7", "xid", gpu=0, code=79, detail="off the bus")
        change = NodeTransition("10.0.0.7", "broken", time.time(), ("7 of 8 GPUs healthy",))
        shard.push(fleet_at(time.time(), lost=True, new_events=(xid,), transitions=(change,)))
        seen: list[FleetSnapshot] = []
        viewer.subscribe(seen.append)
        await wait_until(lambda: any(s.new_events == (xid,) for s in seen), 10, "live event")
        assert any(s.transitions == (change,) for s in seen)
        node = viewer.latest().node("10.0.0.7")  # type: ignore[union-attr]
        assert node is not None and node.state == "broken" and node.gpus[0].verdict == "lost"
        assert viewer.board.owner_of("10.0.0.7") == 2  # a name with dots: never in a subject

        # Request/reply to the owning shard: detail and series for the node screen.
        viewer.gpu_series("10.0.0.7", 0)
        await wait_until(lambda: len(viewer.gpu_series("10.0.0.7", 0).util) == 120, 10)

        def detailed() -> bool:
            viewer.gpu_series("10.0.0.7", 0)  # as the node screen does on every refresh
            node = viewer.latest().node("10.0.0.7")  # type: ignore[union-attr]
            return node is not None and node.gpus[3].uuid == "GPU-a-3"

        await wait_until(detailed, 10, "detail in the viewer's snapshot")
        # This NATS has no users: the shard runs no probe for whoever asks.
        with pytest.raises(RuntimeError, match=r"need authenticated NATS"):
            await viewer.probe("10.0.0.7")
        with pytest.raises(KeyError):
            await viewer.probe("node-nobody-has")

        # Hostile bytes on a summary subject are dropped whole; the fleet stays as it was.
        raw = await nats.connect(nats_server.url)
        await raw.publish("gpufleet.summary.9", b"\x93\x01\x02")
        await raw.flush()
        await raw.close()
        await wait_until(lambda: viewer.malformed == 1, 10, "malformed counted")
        assert [n.name for n in viewer.latest().nodes] == ["10.0.0.7"]  # type: ignore[union-attr]

        # A viewer attaching later replays the event log into the node's events.
        await late.start()

        def replayed() -> bool:
            shard.push(fleet_at(time.time(), lost=True))  # the shard keeps ticking
            node = late.latest().node("10.0.0.7") if late.latest() else None
            return node is not None and xid in node.events

        await wait_until(replayed, 10, "replayed event")
    finally:
        await late.stop()
        await viewer.stop()
        await publisher.stop()
