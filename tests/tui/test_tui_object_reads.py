"""Per tick the dashboard reads GPU / port objects only for what is on screen.

Under the lazy snapshot of issue #11 a node's objects are built on first read, so a
fleet-wide reader that walks every node's ``gpus`` builds the whole fleet each tick.
Fleet-wide readers go through ``tui.node_facts`` (briefs after the merge); these tests
count the objects read anywhere else.
"""

from __future__ import annotations

from pathlib import Path

from bench.lib.object_reads import ReadCounter
from testkit.snapshots import T0, demo_snapshot, retick
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import wait_for
from tui.app import build_app
from tui.grid_rows import layout_for
from tui.header_view import header_tiles
from tui.node_facts import gpu_facts, link_trouble, nic_facts, nvlink_trouble, port_facts
from tui.node_view import SummaryCache, parse_filter, sort_nodes
from tui.panels import failed_gpus, link_issue_lines
from tui.widgets.fleet_grid import FleetGrid


def test_fleet_wide_readers_read_no_gpu_or_port_object() -> None:
    snap = demo_snapshot(64)
    cache = SummaryCache()
    with ReadCounter() as counter:
        counter.counting = True
        tiles = header_tiles(snap)
        failed = failed_gpus(snap)
        layout = layout_for(snap.nodes, 120)
        by_health = sort_nodes(snap.nodes, "health", cache)
        pred = parse_filter("state:up|broken|warn why:GPU gpu:5 probe:any|pass")
        matched = [n.name for n in snap.nodes if pred(n, cache.get(n))]
        objects, facts = counter.take()
    assert objects == {"gpus": 0, "ports": 0, "nics": 0}
    assert facts["gpus"] == 64  # every node's facts were read instead
    # ...and the answers are the ones the objects give
    assert "healthy" in tiles.gpus and failed and layout.gpu_slots == 8
    assert by_health[0].state != "up" and matched == []


def test_interconnect_reads_objects_of_nodes_with_link_trouble_only() -> None:
    snap = demo_snapshot(64)
    trouble = {
        id(n)
        for n in snap.nodes
        if any(map(link_trouble, (*port_facts(n), *nic_facts(n))))
        or any(map(nvlink_trouble, gpu_facts(n)))
    }
    with ReadCounter() as counter:
        counter.counting = True
        lines = link_issue_lines(snap, limit=50)
        read = set().union(*counter.read.values())
    assert 0 < len(read) <= len(trouble) < 64 and read <= trouble
    assert any("mlx5_3" in line and "DOWN" in line for line in lines)


async def test_a_refresh_reads_objects_only_for_rows_on_screen(tmp_path: Path) -> None:
    first = demo_snapshot(300)
    fleet = StaticFleet([first])
    app = build_app(fleet, state_path=tmp_path / "s.json")
    with ReadCounter() as counter:
        async with app.run_test(size=(120, 40)) as pilot:
            grid = app.main.query_one(FleetGrid)
            await wait_for(pilot, lambda: len(grid.rows) == 300)
            await pilot.press("G")  # the cursor to the last node: the view scrolls
            await pilot.pause()
            tick = retick(first, T0 + 1, seed=1)
            fleet.push(tick)
            counter.counting = True
            await wait_for(pilot, lambda: app.main.snapshot is tick)
            await pilot.pause()
            counter.counting = False
            top = int(grid.scroll_offset.y)
            on_screen = {id(n) for n in grid.rows[top : top + grid.size.height]}
            trouble = {
                id(n)
                for n in tick.nodes
                if any(map(link_trouble, (*port_facts(n), *nic_facts(n))))
                or any(map(nvlink_trouble, gpu_facts(n)))
            }
            read = counter.read["gpus"]
            assert grid.rows[-1].name == "node-0300" and id(grid.rows[-1]) in read
            assert read <= on_screen | trouble, "GPU objects read for lines off screen"
            assert len(read) < 60
