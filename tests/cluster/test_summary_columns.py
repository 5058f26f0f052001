"""A shard's per-tick summary from the tick's columns and briefs equals the one from the
GPU and port objects, and builds none of them (the state builds objects on first read)."""

from __future__ import annotations

import json
import time

from bench.fleet_nodes import CannedNode
from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from fleet.cluster.wire import decode_summary, summarize, summarize_node
from fleet.config import Config
from fleet.facade import FleetSnapshot
from fleet.runtime import FleetRuntime
from testkit.snapshots import T0
from tests.tui.object_reads import ReadCounter


def without_gpu(line: bytes, index: int) -> bytes:
    sample = json.loads(line)
    sample["gpus"][index] = None  # no reading for that GPU this tick
    return json.dumps(sample).encode() + b"\n"


def state_snapshot(count: int, ticks: int = 3) -> FleetSnapshot:
    names = [f"node-{i:03d}" for i in range(1, count + 1)]
    runtime = FleetRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=None, clock=time.time
    )
    nodes = [CannedNode(i, 8, 8, 1.0) for i in range(count)]
    for name, node in zip(names, nodes, strict=True):
        runtime._state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    snapshot = None
    for k in range(1, ticks + 1):
        for i, (name, node) in enumerate(zip(names, nodes, strict=True)):
            line = node.sample(T0 + k)
            if i == 1 and k == ticks:
                line = without_gpu(line, 3)
            runtime._state.ingest(NodeMessage(name, decode_line(line), T0 + k))
        snapshot = runtime.tick(T0 + k + 0.5)
    assert snapshot is not None
    return snapshot


def test_summaries_from_columns_equal_the_objects_and_build_none() -> None:
    snap = state_snapshot(6)
    assert snap.columns is not None
    with ReadCounter() as counter:
        counter.counting = True
        fast = [summarize_node(node, snap.columns) for node in snap.nodes]
        objects, _ = counter.take()
    assert objects["gpus"] == 0 and objects["ports"] == 0
    slow = [summarize_node(node) for node in snap.nodes]  # from the objects
    assert fast == slow
    lost = fast[1].gpus[3]  # a GPU without a reading: no utilization, and its verdict
    assert lost.util is None and lost.verdict == "lost"
    assert all(g.util is not None for g in fast[0].gpus)


def test_summaries_from_columns_are_no_larger_on_the_wire() -> None:
    snap = state_snapshot(6)
    fast = summarize(1, 3, 7, 1.0, snap.nodes, snap.taken_at, snap.columns)
    slow = summarize(1, 3, 7, 1.0, snap.nodes, snap.taken_at)
    assert fast == slow  # the same bytes: a whole utilization is not sent as "60.0"
    assert [decode_summary(p) for p in fast] == [decode_summary(p) for p in slow]
