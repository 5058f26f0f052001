"""A shard's per-tick summary from the tick's columns and briefs equals the one from the
GPU and port objects, and builds none of them (the state builds objects on first read)."""

from __future__ import annotations

import json

from bench.lib.fleet_states import state_ticks
from bench.lib.object_reads import ReadCounter
from cluster.wire import decode_summary, summarize, summarize_node
from fleet.facade import FleetSnapshot
from testkit.snapshots import T0


def without_gpu(line: bytes, index: int) -> bytes:
    sample = json.loads(line)
    sample["gpus"][index] = None  # no reading for that GPU this tick
    return json.dumps(sample).encode() + b"\n"


def lose_gpu_3_of_node_2(line: bytes, node: int, tick: int) -> bytes:
    return without_gpu(line, 3) if node == 1 and tick == 3 else line


def state_snapshot(count: int) -> FleetSnapshot:
    return state_ticks(count, 3, lose_gpu_3_of_node_2, t0=T0)[-1]


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
