"""Node figures from the tick's columns equal those from the GPU objects, and build none."""

from __future__ import annotations

import time

from bench.fleet_nodes import CannedNode
from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from fleet.config import Config
from fleet.facade import FleetSnapshot
from fleet.runtime import FleetRuntime
from testkit.snapshots import T0
from tests.tui.object_reads import ReadCounter
from tui.node_view import SummaryCache, node_figures, sort_nodes, summarize


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
        for name, node in zip(names, nodes, strict=True):
            runtime._state.ingest(NodeMessage(name, decode_line(node.sample(T0 + k)), T0 + k))
        snapshot = runtime.tick(T0 + k + 0.5)
    assert snapshot is not None
    return snapshot


def test_figures_from_columns_equal_the_objects_and_build_none() -> None:
    snap = state_snapshot(20)
    assert snap.columns is not None
    with ReadCounter() as counter:
        counter.counting = True
        summaries = [summarize(n, snap.columns) for n in snap.nodes]
        figures = [(s.util, s.power_w, s.hottest_c) for s in summaries]
        cache = SummaryCache()
        cache.refresh(snap.columns)
        by_util = sort_nodes(snap.nodes, "utilization", cache)
        objects, _ = counter.take()
    assert objects["gpus"] == 0 and len(by_util) == 20
    for node, got in zip(snap.nodes, figures, strict=True):
        want = node_figures(node)
        assert got == (want.util, want.power_w, want.hottest_c)
    assert summaries[0].mem_pct == node_figures(snap.nodes[0]).mem_pct  # from the objects
