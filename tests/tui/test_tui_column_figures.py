"""Node figures from the tick's columns equal those from the GPU objects, and build none."""

from __future__ import annotations

from bench.lib.fleet_states import state_ticks
from bench.lib.object_reads import ReadCounter
from fleet.facade import FleetSnapshot
from testkit.snapshots import T0
from tui.node_view import SummaryCache, node_figures, sort_nodes, summarize


def state_snapshot(count: int, ticks: int = 3) -> FleetSnapshot:
    return state_ticks(count, ticks, t0=T0)[-1]


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
