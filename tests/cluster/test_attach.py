"""Three shards over one simulated fleet with faults, on a real nats-server.

One viewer drives the dashboard (Pilot, built by the CLI's factory), a second one is
headless; both attach through NATS only.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import Static

from cluster.attach import AttachedFleet
from fleet.model import FleetSnapshot
from tests.cluster.conftest import EXPECTED_STATE, INTERVAL, ShardedFleet
from tests.tui.pilot_helpers import SIZE, wait_for
from tui.app import build_app
from tui.messages import OpenNode
from tui.screens.node_screen import NodeScreen
from tui.widgets.fleet_grid import FleetGrid
from tui.widgets.header import Tile

pytestmark = pytest.mark.e2e


@contextlib.asynccontextmanager
async def attached(url: str) -> AsyncIterator[AttachedFleet]:
    # The header's first figure waits for 30 s of monitored time (FIRST_FIGURE_MS, tested
    # in test_fleet_sla.py); here a few intervals do, since the figure is what is judged.
    viewer = AttachedFleet(
        url,
        tick_s=INTERVAL,
        read_only=True,
        sla_refresh_s=1.0,
        sla_first_figure_s=6 * INTERVAL,
    )
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


def grid_line(app: object, name: str) -> str:
    grid = app.main.query_one(FleetGrid)  # type: ignore[attr-defined]
    index = [n.name for n in grid.rows].index(name)
    return str(grid.render_line(index + 1 - int(grid.scroll_offset.y)).text)


async def test_dashboard_and_viewer_attached_kill_and_restart_a_shard(
    sharded: ShardedFleet, tmp_path: Path
) -> None:
    url = sharded.config.cluster.nats_url
    assert url is not None
    async with attached(url) as one, attached(url) as two:
        app = build_app(one, state_path=tmp_path / "ui.json", refresh_s=0.2)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: settled(one) and settled(two), 60)
            snap = one.latest()
            assert snap is not None
            assert [g.verdict for g in snap.nodes[1].gpus].count("lost") == 1
            assert "GPU lost" in " ".join(snap.nodes[1].gpus[3].reasons)
            node_004 = snap.node("node-004")
            assert node_004 is not None
            assert [p.verdict for p in node_004.ports if p.name.startswith("mlx5_1")] == ["fail"]
            # Two viewers, one truth: the same statuses and node states.
            await wait_for(pilot, lambda: states(one.latest()) == states(two.latest()), 10)
            await wait_for(pilot, lambda: "BROKEN" in grid_line(app, "node-002"), 10)
            assert "unreachable" in grid_line(app, "node-005")

            # The SLA header, as `watch` shows it: every shard's ledger judged as one
            # fleet (node-005 unreachable with no grace: the month is below 100 %).
            def sla_tile() -> str:
                return str(app.main.query_one("#tile-sla", Tile).text)

            def sla_shown() -> bool:
                sla = one.sla.latest
                measured = sla is not None and sla.availability_pct is not None
                return measured and sla.availability_pct < 100 and "MTD" in sla_tile()  # type: ignore[union-attr, operator]

            await wait_for(pilot, sla_shown, 30)
            assert "not configured" not in sla_tile()
            assert set(one.sla.ledgers) == {1, 2, 3}

            # The node screen's detail and events come from the owning shard.
            app.post_message(OpenNode("node-002"))
            await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
            await pilot.pause()
            await wait_for(
                pilot,
                lambda: "XID 79" in str(app.screen.query_one("#events", Static).content),
                15,
            )

            def detailed() -> bool:
                node = one.latest().node("node-002")  # type: ignore[union-attr]
                return node is not None and node.driver is not None

            await wait_for(pilot, detailed, 15)
            detail = one.latest().node("node-002")  # type: ignore[union-attr]
            assert detail is not None and detail.gpus[0].uuid.startswith("GPU-")
            with pytest.raises(PermissionError):
                await one.probe("node-001")
            await pilot.press("escape")

            # Kill shard 1 (node-004): unmonitored within a few intervals, not broken.
            await sharded.stop_shard(1)
            await wait_for(pilot, lambda: "unmonitored" in grid_line(app, "node-004"), 8)
            await wait_for(pilot, lambda: states(two.latest())["node-004"][0] == "unmonitored", 8)
            others = {k: v for k, v in states(one.latest()).items() if k != "node-004"}
            assert all(status != "unmonitored" for status, _ in others.values())
            await sharded.start_shard(1)
            await wait_for(
                pilot, lambda: states(one.latest()).get("node-004") == ("streaming", "broken"), 40
            )
            await wait_for(pilot, lambda: "BROKEN" in grid_line(app, "node-004"), 10)
    assert one.malformed == two.malformed == 0
