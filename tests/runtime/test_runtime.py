"""FleetRuntime end to end: real agent + simulator behind loopback SSH, state, history."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from gpufleet.runtime import FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.runtime.waits import wait_for_snapshot


async def test_lost_gpu_breaks_its_node_and_spares_the_others(
    sim_runtime: tuple[FleetRuntime, LoopbackFleet],
) -> None:
    runtime, _ = sim_runtime
    # The agent reports the GPU lost in a sample and XID 79 from its event thread: on a
    # loaded machine a tick can fall between the two, so the wait is for both.
    snap = await wait_for_snapshot(
        runtime,
        lambda s: (
            (n := s.node("node-002")) is not None
            and len(n.gpus) == 8
            and n.gpus[3].verdict == "lost"
            and any("79" in reason for reason in n.gpus[3].reasons)
        ),
    )
    broken = snap.node("node-002")
    assert broken is not None and broken.state == "broken"
    assert [g.verdict for g in broken.gpus if g.index != 3] == ["ok"] * 7
    healthy = await wait_for_snapshot(
        runtime, lambda s: [s.node(n).state for n in ("node-001", "node-003")] == ["up", "up"]
    )
    assert healthy.nodes_streaming == 3
    lost = healthy.node("node-002")
    assert lost is not None and any(e.code == 79 for e in lost.events)


async def test_runtime_records_the_broken_interval_and_reads_it_back(
    sim_runtime: tuple[FleetRuntime, LoopbackFleet], tmp_path: Path
) -> None:
    runtime, _ = sim_runtime
    # ``nodes_broken`` counts unreachable nodes too: on a loaded machine a node still
    # waiting for its first sample satisfied "one broken" before the XID came. The lost
    # GPU's sample can turn the node broken a tick before its XID 79 joins the reasons:
    # the recorded interval must carry the XID all the same.
    await wait_for_snapshot(
        runtime,
        lambda s: (
            (n := s.node("node-002")) is not None
            and n.state == "broken"
            and any("79" in r for r in n.broken_reasons)
            and s.nodes_streaming == 3
        ),
    )
    await runtime.stop()
    states = pl.read_parquet(tmp_path / "data" / "node_states" / "**" / "*.parquet")
    broken = states.filter(pl.col("node") == "node-002", pl.col("state") == "broken")
    assert broken.height >= 1
    assert any("79" in r for r in broken["reasons"].explode().to_list())
    events = pl.read_parquet(tmp_path / "data" / "events" / "**" / "*.parquet")
    assert events.filter(pl.col("code") == 79)["node"].to_list() == ["node-002"]
