"""Scheduler jobs on the dashboard: the job:/user: filter terms, the grid's job column and
the node screen's job per GPU, from the jobs each NodeSnapshot carries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from textual.widgets import DataTable, Input

from fleet.facade import FleetSnapshot, JobInterval, NodeSnapshot
from testkit.snapshots import T0, demo_snapshot
from testkit.static_fleet import StaticFleet
from tests.tui.pilot_helpers import SIZE, filtered, wait_for
from tui.app import GpuFleetApp
from tui.node_tables import TELEMETRY_COLUMNS
from tui.screens.node_screen import NodeScreen
from tui.widgets.fleet_grid import FleetGrid

MakeApp = Callable[..., GpuFleetApp]


def job(node: str, gpu: int, ident: str, user: str, name: str = "") -> JobInterval:
    return JobInterval(
        node=node,
        gpu=gpu,
        uuid=f"GPU-{node}-{gpu}",
        scheduler="slurm",
        job=ident,
        step="0",
        user=user,
        start=T0,
        name=name,
    )


# node-0002: alice's pretraining on all eight GPUs; node-0004: bob's job on GPUs 0-1 and
# a second, short-lived one of carol's on GPU 7 (ids in natural order: 999 before 5150).
JOBS = {
    "node-0002": tuple(job("node-0002", g, "4242", "alice", "llama-pretrain") for g in range(8)),
    "node-0004": (
        job("node-0004", 0, "5150", "bob"),
        job("node-0004", 1, "5150", "bob"),
        job("node-0004", 7, "999", "carol", "eval"),
    ),
}


def jobs_fleet() -> FleetSnapshot:
    snap = demo_snapshot(4, faults=False)
    nodes: list[NodeSnapshot] = [replace(n, jobs=JOBS.get(n.name, ())) for n in snap.nodes]
    every = tuple(i for n in nodes for i in n.jobs)
    return replace(snap, nodes=tuple(nodes), jobs=every)


async def test_job_and_user_terms_filter_by_the_jobs_on_the_node(make_app: MakeApp) -> None:
    app = make_app(StaticFleet([jobs_fleet()]))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 4)
        assert await filtered(app, pilot, "job:4242") == ["node-0002"]
        assert await filtered(app, pilot, "job:LLAMA") == ["node-0002"]  # a part of its name
        assert await filtered(app, pilot, "job:424") == []  # an id matches whole
        assert await filtered(app, pilot, "job:999|4242") == ["node-0002", "node-0004"]
        assert await filtered(app, pilot, "user:Bob") == ["node-0004"]
        assert await filtered(app, pilot, "user:carol|alice") == ["node-0002", "node-0004"]
        assert await filtered(app, pilot, "user:alice job:5150") == []
        box = app.main.query_one("#filter", Input)
        box.value = "user:"
        await wait_for(pilot, lambda: box.has_class("-invalid"))
        assert str(box.border_subtitle) == "user: needs a user name, e.g. user:alice"
        assert grid.filter_text == "user:alice job:5150"  # the filter last applied stays


def grid_line(app: GpuFleetApp, row: int) -> str:
    return app.main.query_one(FleetGrid).render_line(row).text


async def test_the_grid_shows_each_node_s_jobs_in_a_job_column(make_app: MakeApp) -> None:
    app = make_app(StaticFleet([jobs_fleet()]))
    async with app.run_test(size=SIZE) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 4)
        header = grid_line(app, 0)
        assert header.index(" job ") < header.index("why")
        at = header.index(" job ") + 1
        cells = [grid_line(app, row)[at : at + 12].strip() for row in (1, 2, 3, 4)]
        assert cells == ["", "4242", "", "999,5150"]


async def test_without_jobs_the_grid_has_no_job_column(make_app: MakeApp) -> None:
    app = make_app(StaticFleet([demo_snapshot(4, faults=False)]))
    async with app.run_test(size=SIZE) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 4)
        assert " job " not in grid_line(app, 0)


async def test_the_node_screen_names_the_job_on_each_gpu(make_app: MakeApp) -> None:
    app = make_app(StaticFleet([jobs_fleet()]))
    async with app.run_test(size=SIZE) as pilot:
        grid = app.main.query_one(FleetGrid)
        await wait_for(pilot, lambda: len(grid.rows) == 4)
        await pilot.press("down", "down", "down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NodeScreen))
        table = app.screen.query_one("#telemetry", DataTable)
        await wait_for(pilot, lambda: table.row_count == 8)
        column = TELEMETRY_COLUMNS.index("job")
        shown = [str(table.get_row_at(r)[column]) for r in range(8)]
        assert shown == ["5150", "5150", "—", "—", "—", "—", "—", "999"]
