"""Fast GPU rows staged at ingest reach the columns in order, whatever comes between."""

from __future__ import annotations

import math

import numpy as np

from collectors.agent.fields import GPU_FIELDS
from fleet.state.columns import FastPlan, GpuArena
from fleet.state.layout import FieldIndex
from tests.fleet.feed import NodeFeed, started_fleet

UTIL = GPU_FIELDS.index("util_gpu")
CANONICAL = FastPlan(FieldIndex.of(GPU_FIELDS))


def _row(util: float) -> tuple[float, ...]:
    return (util, *range(1, len(GPU_FIELDS)))


def _util(state_columns: np.ndarray, start: int, count: int) -> list[float]:
    return [float(v) for v in state_columns[start : start + count, UTIL]]


def test_a_node_sampled_twice_before_a_tick_shows_its_second_sample() -> None:
    a, b = NodeFeed("gpu-a", gpus=2), NodeFeed("gpu-b", gpus=2)
    state = started_fleet(a, b)
    for util in (10, 20):
        a.fast[0]["util_gpu"] = util
        state.ingest(a.sample())
        b.fast[1]["util_gpu"] = util + 1
        state.ingest(b.sample())
    snap = state.snapshot(a.t + 0.5)
    assert snap.columns is not None
    node_a, node_b = snap.nodes
    assert node_a.rows is not None and node_b.rows is not None
    assert _util(snap.columns.fast, node_a.rows.gpu_start, 2) == [20.0, 50.0]
    assert _util(snap.columns.fast, node_b.rows.gpu_start, 2) == [50.0, 21.0]
    assert snap.utilization.now == (20 + 50 + 50 + 21) / 4


def test_a_lost_gpu_after_a_staged_sample_of_its_node_is_not_overwritten() -> None:
    feed = NodeFeed("gpu-a", gpus=2)
    state = started_fleet(feed)
    feed.fast[1]["util_gpu"] = 70
    state.ingest(feed.sample())  # whole rows: staged
    feed.lost = {1}
    state.ingest(feed.sample())  # a lost GPU: written at once, after the staged rows
    snap = state.snapshot(feed.t + 0.5)
    assert snap.columns is not None and snap.nodes[0].rows is not None
    start = snap.nodes[0].rows.gpu_start
    assert snap.columns.fast[start, UTIL] == 50.0 and math.isnan(snap.columns.fast[start + 1, UTIL])


def test_staged_rows_never_land_after_their_range_is_cleared() -> None:
    arena = GpuArena(capacity=16)
    start = arena.allocate(2)
    assert arena.stage(start, 2, [_row(5), _row(6)], CANONICAL)
    arena.clear(start, 2)  # a new session: its GPUs start without readings
    other = arena.allocate(2)
    assert arena.stage(other, 2, [_row(7), _row(8)], CANONICAL)
    columns = arena.freeze()
    assert np.isnan(columns.fast[start : start + 2]).all()
    assert columns.fast[other : other + 2, UTIL].tolist() == [7.0, 8.0]


def test_staged_rows_are_the_columns_a_write_gives() -> None:
    staged, written = GpuArena(capacity=64), GpuArena(capacity=64)
    rows: dict[int, list[tuple[float | None, ...]]] = {
        8 * k: [_row(k + g / 10) for g in range(8)] for k in range(5)
    }
    rows[16][3] = (None, *_row(1)[1:])  # a missing value inside a whole row
    for arena in (staged, written):
        arena.allocate(40)
    for start, node_rows in rows.items():
        assert staged.stage(start, 8, node_rows, CANONICAL)
        assert written.write(start, 8, node_rows, CANONICAL)
    np.testing.assert_array_equal(staged.freeze().fast, written.freeze().fast)
    # Short rows are not staged: written at once, as before.
    assert not staged.stage(0, 2, [_row(1)[:3], _row(2)], CANONICAL)
    assert not staged._staged
