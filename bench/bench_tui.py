"""Dashboard refresh cost with 1,000 nodes x 8 GPUs, against a DataTable baseline.

Run: .venv/bin/python bench/bench_tui.py [--nodes 1000] [--ticks 15] [--reads] [--source state]
     .venv/bin/python bench/bench_tui.py --source state --before /work/main [--rounds 3]

Headless (App.run_test at 160x50). For each tick every node is a new object with every
GPU's utilization changed; the CPU (time.process_time) from handing the snapshot over
until the screen has been repainted is measured. Baseline, in the same run: a DataTable
holding the same cells, updated with update_cell for every cell inside batch_update.

``--source state`` builds the ticks with the real fleet state (``FleetRuntime.tick`` over
canned samples of bench/lib/fleet_nodes.py, every value changing) instead of ``retick``: the
snapshots the dashboard gets in production, lazy where the state's nodes are lazy.

``--reads`` also counts, per tick and per view (grid by name, sorted by utilization,
map mode, a node screen open), the nodes whose ``gpus``/``ports``/``nics`` the
dashboard read: under the lazy snapshot each such read builds that node's
GPU/port objects (bench/lib/object_reads.py).

``--before DIR`` measures only the dashboard's refresh, of this tree and of the tree at
DIR (e.g. main's checkout), each in its own process run in turn ``--rounds`` times,
the same ticks for both, and prints the ratio: the before/after in one run. ``--src DIR``
(used by it) imports the product and test code from DIR instead of this tree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

# --src DIR: the code measured comes from DIR (read before the imports below).
sys.path.insert(
    0,
    sys.argv[sys.argv.index("--src") + 1]
    if "--src" in sys.argv
    else str(Path(__file__).resolve().parents[1]),
)

from textual._compositor import Compositor  # private: only to time the first frame
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import DataTable

from bench.lib.object_reads import ReadCounter
from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from fleet.facade import FleetSnapshot, NodeSnapshot
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime
from testkit.snapshots import T0, demo_snapshot, retick
from testkit.static_fleet import StaticFleet
from tui import format as fmt
from tui.app import build_app
from tui.draw import gpu_cells, port_cell
from tui.grid_rows import status_cell
from tui.node_view import summarize
from tui.widgets.fleet_grid import FleetGrid

HERE = Path(__file__).resolve()
SIZE = (160, 50)


def state_ticks(count: int, ticks: int) -> list[FleetSnapshot]:
    """``ticks`` + 1 snapshots of ``count`` canned nodes from the real state and runtime."""
    from bench.lib.fleet_nodes import CannedNode

    names = [f"node-{i:04d}" for i in range(1, count + 1)]
    runtime = FleetRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=None, clock=time.time
    )
    state = runtime._state  # fed as the SSH fleet would feed it
    nodes = [CannedNode(i, 8, 8, 1.0) for i in range(count)]
    for name, node in zip(names, nodes, strict=True):
        state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    out = []
    for k in range(1, ticks + 2):
        for name, node in zip(names, nodes, strict=True):
            state.ingest(NodeMessage(name, decode_line(node.sample(T0 + k)), T0 + k))
        out.append(runtime.tick(T0 + k + 0.5))
    return out


async def settle(pilot: Pilot[None]) -> None:
    """Until every message is handled and the screen repainted (pause ends with an update)."""
    await pilot.pause()


async def bench_dashboard(first: FleetSnapshot, ticks: list[FleetSnapshot]) -> dict[str, object]:
    with TemporaryDirectory() as tmp:
        fleet = StaticFleet([first])
        drawn: list[bool] = []
        painted: list[tuple[float, float]] = []
        draw, update = FleetGrid.render_line, Compositor.render_update

        def render_line(grid: FleetGrid, y: int) -> Strip:
            if y > 0 and grid.rows:
                drawn.append(True)  # a node line is in this frame
            return draw(grid, y)

        def render_update(compositor: Compositor, *args: Any, **kwargs: Any) -> Any:
            result = update(compositor, *args, **kwargs)
            if drawn and not painted:  # the first frame showing nodes is complete
                painted.append((time.perf_counter(), time.process_time()))
            return result

        FleetGrid.render_line = render_line  # type: ignore[method-assign]
        Compositor.render_update = render_update  # type: ignore[method-assign]
        t0, c0 = time.perf_counter(), time.process_time()
        app = build_app(fleet, state_path=Path(tmp) / "s.json", refresh_s=0.0)
        async with app.run_test(size=SIZE) as pilot:
            grid = app.main.query_one(FleetGrid)
            while not painted:
                await pilot.pause(0.001)
            FleetGrid.render_line = draw  # type: ignore[method-assign]
            Compositor.render_update = update  # type: ignore[method-assign]
            first_paint, first_paint_cpu = painted[0][0] - t0, painted[0][1] - c0
            cpu = []
            for tick in ticks:
                c0 = time.process_time()
                fleet.push(tick)
                while app.main.snapshot is not tick:
                    await settle(pilot)
                # The snapshot is applied after a refresh; the repaint it asks for follows.
                await settle(pilot)
                cpu.append(time.process_time() - c0)
                assert id(grid.rows[0]) in grid._strips, "visible rows were not repainted"
    return {"first_paint_s": first_paint, "first_paint_cpu_s": first_paint_cpu, "cpu_s": cpu}


VIEWS = ("grid by name", "grid by utilization", "map", "node screen")


async def bench_reads(first: FleetSnapshot, ticks: list[FleetSnapshot], view: str) -> list[str]:
    """The most nodes whose GPU / port objects one refresh of ``view`` read, over the ticks."""
    with TemporaryDirectory() as tmp, ReadCounter() as counter:
        fleet = StaticFleet([first])
        app = build_app(fleet, state_path=Path(tmp) / "s.json", refresh_s=0.0)
        async with app.run_test(size=SIZE) as pilot:
            grid = app.main.query_one(FleetGrid)
            await settle(pilot)
            if view == "grid by utilization":
                grid.sort_key = "utilization"
            elif view == "map":
                grid.map_mode = True
            elif view == "node screen":
                app.open_node(first.nodes[3].name)
            await settle(pilot)
            most = {"gpus": 0, "ports": 0, "nics": 0}
            facts = dict(most)
            for tick in ticks:
                fleet.push(tick)  # the desk's observe (the runtime's, in production) not counted
                counter.counting = True
                while app.main.snapshot is not tick:
                    await settle(pilot)
                await settle(pilot)
                counter.counting = False
                objects, briefs = counter.take()
                for name in most:
                    most[name] = max(most[name], objects[name])
                    facts[name] = max(facts[name], briefs[name])
    return [
        f"{view}: objects of {most['gpus']} gpus, {most['ports']} ports, {most['nics']} nics;"
        f" facts (briefs) of {facts['gpus']} / {facts['ports']} / {facts['nics']}"
    ]


COLUMNS = ("node", "status", *[f"gpu{i}" for i in range(8)], "util", "ports", "power", "temp",
           "why")  # fmt: skip


def table_row(n: NodeSnapshot) -> list[str]:
    """The grid's columns for one node, as the cells of a DataTable row."""
    summary = summarize(n)
    return [
        n.name,
        status_cell(n)[0],
        *[glyph for glyph, _ in gpu_cells(n.gpus, n.expected_gpus)],
        fmt.pct(summary.util, 0),
        "".join(port_cell(p)[0] for p in n.ports),
        fmt.watts(summary.power_w),
        fmt.celsius(summary.hottest_c),
        "; ".join(n.broken_reasons),
    ]


class TableApp(App[None]):
    """Baseline: the grid's columns in a DataTable, every cell updated per tick."""

    def compose(self) -> ComposeResult:
        yield DataTable()

    def load(self, snap: FleetSnapshot) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        for n in snap.nodes:
            table.add_row(*table_row(n), key=n.name)

    def update(self, snap: FleetSnapshot) -> None:
        table = self.query_one(DataTable)
        keys = list(table.columns)
        with self.batch_update():
            for n in snap.nodes:
                for key, value in zip(keys, table_row(n), strict=True):
                    table.update_cell(n.name, key, value)


class BareApp(App[None]):
    """Reference for startup: an app with one empty DataTable."""

    def compose(self) -> ComposeResult:
        yield DataTable()


async def bench_bare() -> tuple[float, float, float]:
    """First paint of a bare app, and the CPU of one idle settle (the harness's own cost)."""
    t0, c0 = time.perf_counter(), time.process_time()
    async with BareApp().run_test(size=SIZE) as pilot:
        await pilot.pause()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        idle = []
        for _ in range(10):
            c1 = time.process_time()
            await settle(pilot)
            idle.append(time.process_time() - c1)
        return wall, cpu, statistics.median(idle)


async def bench_table(first: FleetSnapshot, ticks: list[FleetSnapshot]) -> dict[str, object]:
    app = TableApp()
    t0 = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        app.load(first)
        await settle(pilot)
        first_paint = time.perf_counter() - t0
        cpu = []
        for tick in ticks:
            c0 = time.process_time()
            app.update(tick)
            await settle(pilot)
            cpu.append(time.process_time() - c0)
    return {"first_paint_s": first_paint, "cpu_s": cpu}


def refresh_cpu_ms(args: argparse.Namespace, src: Path) -> list[float]:
    """The dashboard's refresh CPU per tick (ms), measured with the code of ``src``."""
    argv = [sys.executable, str(HERE), "--src", str(src), "--dashboard-only"]
    argv += ["--nodes", str(args.nodes), "--ticks", str(args.ticks), "--source", args.source]
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    return [float(ms) for ms in json.loads(out.splitlines()[-1])["cpu_ms"]]


def before_after(args: argparse.Namespace) -> int:
    """This tree's dashboard against the tree at ``args.before``, in turns, same ticks."""
    trees = {"before": args.before.resolve(), "after": HERE.parents[1]}
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    load = os.getloadavg()[0]
    for k in range(args.rounds):
        for name, src in trees.items():
            ticks = refresh_cpu_ms(args, src)
            cpu[name] += ticks
            print(f"round {k + 1} {name} ({src}): median {statistics.median(ticks):.1f} ms")
    before, after = (statistics.median(cpu[name]) for name in trees)
    print(
        f"nodes={args.nodes} ticks={args.ticks}x{args.rounds} source={args.source} size="
        f"{SIZE[0]}x{SIZE[1]} load={load:.2f}->{os.getloadavg()[0]:.2f}\n"
        f"dashboard refresh CPU median: before {before:.1f} ms, after {after:.1f} ms,"
        f" before/after {before / after:.2f}x"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=15)
    parser.add_argument("--reads", action="store_true", help="count the objects read per tick")
    parser.add_argument("--source", choices=("retick", "state"), default="retick")
    parser.add_argument("--before", type=Path, help="a tree to compare with (e.g. main's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--src", type=Path, help="measure the code of this tree")
    parser.add_argument("--dashboard-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.before is not None:
        return before_after(args)
    if args.source == "state":
        first, *ticks = state_ticks(args.nodes, args.ticks)
    else:
        first = demo_snapshot(args.nodes)
        ticks = [retick(first, T0 + k, seed=k) for k in range(1, args.ticks + 1)]
    if args.dashboard_only:
        cpu = asyncio.run(bench_dashboard(first, ticks))["cpu_s"]
        print(json.dumps({"cpu_ms": [s * 1000 for s in cpu]}))  # type: ignore[attr-defined]
        return 0
    table_ticks = ticks[: max(3, args.ticks // 3)]
    bare_wall, bare_cpu, idle_settle = asyncio.run(bench_bare())
    line = asyncio.run(bench_dashboard(first, ticks))
    table = asyncio.run(bench_table(first, table_ticks))
    c0 = time.process_time()
    for _ in range(5):
        [table_row(n) for n in ticks[0].nodes]
    rows_ms = (time.process_time() - c0) / 5 * 1000
    line_ms = statistics.median(line["cpu_s"]) * 1000  # type: ignore[arg-type]
    table_ms = statistics.median(table["cpu_s"]) * 1000  # type: ignore[arg-type]
    print(
        f"nodes={args.nodes} gpus/node=8 size={SIZE[0]}x{SIZE[1]} ticks={args.ticks}"
        f" source={args.source}"
    )
    print(f"dashboard (Line API grid + panels) refresh CPU median: {line_ms:.1f} ms")
    print(
        "baseline DataTable (same 15 columns) update_cell every cell in batch_update: "
        f"{table_ms:.1f} ms (of which building the 1,000 rows' values: {rows_ms:.1f} ms)"
    )
    print(f"ratio baseline/dashboard: {table_ms / line_ms:.1f}x")
    print(f"(both include one settle of the test harness: {idle_settle * 1000:.1f} ms idle)")
    print(
        "dashboard first paint (app start -> first frame with nodes written): "
        f"{line['first_paint_s']:.3f} s wall, "
        f"{line['first_paint_cpu_s']:.3f} s CPU"
    )
    print(
        f"reference: bare Textual app to first paint: {bare_wall:.3f} s wall, {bare_cpu:.3f} s CPU"
    )
    print(f"baseline first paint (app start -> table drawn): {table['first_paint_s']:.3f} s")
    if args.reads:
        print(f"nodes whose objects one refresh read (most over {len(table_ticks)} ticks):")
        for view in VIEWS:
            for line in asyncio.run(bench_reads(first, table_ticks, view)):
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
