"""The state's columns and lazy snapshots: what readers of a tick can rely on."""

from __future__ import annotations

import math

import numpy as np

from collectors.agent.fields import GPU_FIELDS, PORT_FIELDS, PROTOCOL_VERSION
from collectors.protocol import Sample
from collectors.updates import NodeMessage
from fleet.model import GpuBrief, evolve
from tests.fleet.feed import NodeFeed, started_fleet

UTIL = GPU_FIELDS.index("util_gpu")


def test_columns_hold_each_nodes_fast_values_and_later_samples_do_not_reach_them() -> None:
    a, b = NodeFeed("gpu-a", gpus=2), NodeFeed("gpu-b", gpus=3)
    state = started_fleet(a, b)
    a.fast[1]["util_gpu"] = 77
    b.lost = {2}
    state.ingest(a.sample())
    state.ingest(b.sample())
    first = state.snapshot(a.t + 0.5)
    assert first.columns is not None
    node_a, node_b = first.nodes
    assert node_a.rows is not None and node_b.rows is not None
    rows_a = first.columns.fast[node_a.rows.gpu_start : node_a.rows.gpu_start + 2, UTIL]
    rows_b = first.columns.fast[node_b.rows.gpu_start : node_b.rows.gpu_start + 3, UTIL]
    assert rows_a.tolist() == [50.0, 77.0]
    assert rows_b[:2].tolist() == [50.0, 50.0] and math.isnan(rows_b[2])  # lost: no row
    a.fast[1]["util_gpu"] = 5
    state.ingest(a.sample())
    second = state.snapshot(a.t + 0.5)
    assert rows_a.tolist() == [50.0, 77.0]  # the first tick's copy stays as it was
    assert first.nodes[0].gpus[1].util_gpu == 77  # built late, from the first tick's rows
    assert second.nodes[0].gpus[1].util_gpu == 5
    assert second.utilization.now == (50 + 5 + 50 + 50) / 4


def test_gpu_and_port_objects_are_built_on_first_read_and_evolve_keeps_them_unbuilt() -> None:
    feed = NodeFeed()
    state = started_fleet(feed)
    node = state.snapshot(feed.t + 0.5).nodes[0]
    assert node.rows is not None
    assert node.rows.built("gpus") is None and node.rows.built("ports") is None
    assert node.gpu_count == 8 and node.healthy_gpus == 8  # from the briefs
    assert node.rows.built("gpus") is None
    moved = evolve(node, state="broken")
    assert moved.rows is node.rows and node.rows.built("ports") is None
    assert moved.gpus == node.gpus and moved.ports == node.ports
    assert node.rows.built("gpus") is node.gpus  # built once, shared by both
    assert moved.gpu_briefs == tuple(map(GpuBrief.of, node.gpus))


def test_briefs_are_the_same_object_while_nothing_in_them_changes() -> None:
    feed = NodeFeed()
    state = started_fleet(feed)
    state.ingest(feed.sample())
    before = state.snapshot(feed.t + 0.5).nodes[0]
    feed.fast[0]["util_gpu"] = 99  # telemetry moves, verdicts and links do not
    feed.ports[0]["port_xmit_data"] += 1_000_000
    state.ingest(feed.sample())
    after = state.snapshot(feed.t + 0.5).nodes[0]
    assert after is not before
    assert after.gpu_briefs is before.gpu_briefs
    assert after.port_briefs is before.port_briefs
    feed.ports[1]["state"] = 1  # DOWN
    state.ingest(feed.sample())
    down = state.snapshot(feed.t + 0.5).nodes[0]
    assert down.port_briefs is not after.port_briefs
    assert down.port_briefs[1].state == "DOWN" and down.port_briefs[1].verdict == "fail"


def test_a_counter_beyond_float_range_reads_as_missing_for_its_port_only() -> None:
    feed = NodeFeed(ports=2)
    state = started_fleet(feed)
    rows = [[feed.ports[i][n] for n in PORT_FIELDS] for i in range(2)]
    rows[0][PORT_FIELDS.index("port_xmit_data")] = 10**400  # no decoder would pass it
    gpus = [[f[n] for n in GPU_FIELDS] for f in feed.fast]
    sample = Sample(v=PROTOCOL_VERSION, t=feed.t + 1, seq=99, gpus=gpus, ports=rows)
    state.ingest(NodeMessage(feed.name, sample, feed.t + 1))
    node = state.snapshot(feed.t + 1.5).nodes[0]
    assert node.ports[0].tx_bytes_per_s is None  # its reading is missing this tick
    assert node.ports[0].verdict == "ok" and node.ports[1].verdict == "ok"
    assert dict(node.ports[0].counters)["port_xmit_data"] == 10**400  # raw, as sent
    assert np.isfinite(node.ports[1].tx_bytes_per_s or 0.0)


def test_a_detached_node_carries_its_objects_and_encodes_for_the_bus() -> None:
    from cluster.wire import decode_node, encode

    feed = NodeFeed()
    state = started_fleet(feed)
    node = state.snapshot(feed.t + 0.5).nodes[0]
    detached = node.detached()
    assert detached.rows is None and detached == node
    decoded = decode_node(encode(detached))
    assert decoded.gpus == node.gpus and decoded.ports == node.ports
    assert decoded.driver == node.driver == "580.65"
