"""The grid's GPU cells and memory figure from the tick's columns, and its port cells from
the briefs and the ports' error readings, equal those from the objects, and a tick reads
no GPU or port object for them."""

from __future__ import annotations

import json

from bench.lib.fleet_states import state_ticks
from bench.lib.object_reads import ReadCounter
from fleet.facade import FleetSnapshot
from fleet.model import PortAlarms
from testkit.snapshots import T0
from tui.draw import port_cell
from tui.grid_rows import layout_for, node_cells, port_cells
from tui.node_view import SummaryCache, node_figures, sort_nodes, summarize
from tui.tick_columns import MemoryTotals, gpu_row_cells

UTIL, MEM = 0, 4  # util_gpu and mem_used_mib in the canned agent's row
STATE, SYMBOL, DOWNED, RCV = 0, 3, 5, 6  # in its port rows


def _troubled(line: bytes, node: int, tick: int) -> bytes:
    sample = json.loads(line)
    if node == 1 and tick >= 2:
        sample["gpus"][3] = None  # a GPU without a reading
    if node == 2:
        sample["gpus"][0][UTIL] = None  # one failed reading
        sample["gpus"][5][MEM] = None
        sample["gpus"][6][UTIL] = 2  # idle: its own colour
    if node == 3:
        for row in sample["gpus"]:
            row[MEM] = None  # no memory reading at all: N/A, not 0 %
    if node == 4:
        ports = sample["ports"]
        ports[1][RCV] = 3 * tick  # a few receive errors a second: judged ok, drawn degraded
        ports[2][DOWNED] = 1 if tick >= 2 else 0  # one flap: drawn degraded from then on
        ports[3][SYMBOL] = tick  # symbol errors: the port warns
        ports[4][STATE] = 1  # DOWN
    return json.dumps(sample).encode() + b"\n"


def _ticks(count: int = 8) -> list[FleetSnapshot]:
    return state_ticks(count, 3, _troubled, t0=T0)


def test_gpu_cells_and_memory_from_columns_equal_the_objects_and_build_none() -> None:
    snap = _ticks()[-1]
    layout = layout_for(snap.nodes)
    totals = MemoryTotals()
    [totals.of(n) for n in snap.nodes]  # a session's totals: read once, kept while it lasts
    totals.next_tick()
    with ReadCounter() as counter:
        counter.counting = True
        cells = [gpu_row_cells(n, snap.columns) for n in snap.nodes]
        mems = [summarize(n, snap.columns, totals).mem_pct for n in snap.nodes]
        ports = [port_cells(n) for n in snap.nodes]
        alarms = [n.port_alarms for n in snap.nodes]  # from the tick's port columns
        objects, _ = counter.take()
    assert objects == {"gpus": 0, "ports": 0, "nics": 0}
    detached = [n.detached() for n in snap.nodes]
    assert cells == [gpu_row_cells(n, None) for n in detached]
    assert mems == [node_figures(n).mem_pct for n in detached]
    assert cells[1][3] == ("?", "gpu-lost") and cells[2][0] == ("·", "gpu-unknown")
    assert cells[2][6][1] == "gpu-idle" and mems[3] is None and mems[2] is not None
    assert ports == [[port_cell(p) for p in n.ports] for n in detached]
    assert alarms == [tuple(map(PortAlarms.of, n.ports)) for n in detached]
    assert alarms[4][1].rcv_error_rate == 3.0 and alarms[4][2].link_downed_delta == 1
    # Once the ports were built (detaching built them) the readings come from them.
    assert [n.port_alarms for n in snap.nodes] == alarms
    up, degraded = ("●", "link-up"), ("◐", "link-degraded")
    failing, down = ("◐", "link-down"), ("○", "link-down")  # a flap holds a fail verdict
    assert ports[4][:5] == [up, degraded, failing, degraded, down]
    for node, plain in zip(snap.nodes, detached, strict=True):
        line = node_cells(node, summarize(node, snap.columns, totals), layout)
        assert line == node_cells(plain, summarize(plain), layout)


def test_memory_totals_are_read_once_per_session_and_sorting_builds_no_gpu() -> None:
    first, second = _ticks()[-2:]
    cache = SummaryCache()
    cache.refresh(first.columns)
    sort_nodes(first.nodes, "memory", cache)  # the totals of this session are read here
    cache.refresh(second.columns)
    with ReadCounter() as counter:
        counter.counting = True
        by_memory = sort_nodes(second.nodes, "memory", cache)
        objects, _ = counter.take()
    assert objects["gpus"] == 0
    want = sorted(
        (n for n in second.nodes if node_figures(n).mem_pct is not None),
        key=lambda n: -(node_figures(n).mem_pct or 0.0),
    )
    assert [n.name for n in by_memory[: len(want)]] == [n.name for n in want]
