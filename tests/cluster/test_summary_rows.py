"""The attached view carries each node's summary and builds its objects on first read.

The oracle is ``node_from_summary`` (every node converted in full, as the viewer did
before): over ticks of random changes the board's nodes must equal it field by field,
while a node whose readings alone moved is carried on, not built again.
"""

from __future__ import annotations

import random
from dataclasses import replace

from cluster.board import ShardBoard
from cluster.wire import NodeSummary, ShardEvents, decode_summary, node_from_summary, summarize
from fleet.model import EventRecord, GpuSnapshot, NodeSnapshot, PortSnapshot


def node(name: str, utils: list[float], verdict: str = "ok", t: float = 10.0) -> NodeSnapshot:
    gpus = tuple(
        GpuSnapshot(i, f"GPU-{name}-{i}", "H100", util_gpu=u, power_w=300.0 + u, verdict="ok")
        for i, u in enumerate(utils)
    )
    if verdict != "ok":
        gpus = (replace(gpus[0], verdict=verdict, reasons=("XID 79",)), *gpus[1:])  # type: ignore[arg-type]
    ports = tuple(
        PortSnapshot(f"mlx5_{i}/1", "ib", state="ACTIVE", rate_gbps=400.0, verdict="ok")
        for i in range(4)
    )
    return NodeSnapshot(name, "streaming", last_seen=t, state="up", gpus=gpus, ports=ports)


def feed(board: ShardBoard, nodes: list[NodeSnapshot], at: float, seq: int) -> None:
    for part in summarize(1, 1, seq, 1.0, nodes, at):
        board.apply_summary(decode_summary(part), at)


def test_a_node_whose_readings_moved_is_carried_on_with_its_briefs() -> None:
    board = ShardBoard()
    feed(board, [node("a", [10.0] * 8), node("b", [20.0] * 8)], 10.0, 1)
    first = board.snapshot(10.5)
    a0, b0 = first.nodes
    gpus_before = a0.gpus  # drawn: its GPU objects are built
    briefs_before = a0.gpu_briefs
    # Next tick: GPU 5 of a moved; b repeats its values.
    feed(
        board, [node("a", [10.0] * 5 + [77.0] + [10.0] * 2, t=11.0), node("b", [20.0] * 8)], 11.0, 2
    )
    second = board.snapshot(11.5)
    a1, b1 = second.nodes
    assert board.conversions == 2 and board.restamps == 1  # only the first tick built nodes
    assert b1 is b0  # unchanged: the very object
    assert a1 is not a0 and a1.last_seen == 11.0
    assert a1.gpu_briefs is briefs_before and a1.port_briefs is a0.port_briefs
    assert a1.gpus[5].util_gpu == 77.0 and a1.gpus[5].power_w == 377.0
    assert [g is h for g, h in zip(a1.gpus, gpus_before, strict=True)] == [True] * 5 + [False] + [
        True
    ] * 2
    assert a1.ports is a0.ports
    assert second.utilization.now == (10.0 * 7 + 77.0 + 20.0 * 8) / 16


def test_a_verdict_change_gives_new_briefs_and_the_node_counts_it() -> None:
    board = ShardBoard()
    feed(board, [node("a", [10.0] * 8)], 10.0, 1)
    a0 = board.snapshot(10.5).nodes[0]
    feed(board, [node("a", [10.0] * 8, verdict="lost", t=11.0)], 11.0, 2)
    snap = board.snapshot(11.5)
    a1 = snap.nodes[0]
    assert a1.gpu_briefs is not a0.gpu_briefs and a1.gpu_briefs[0].verdict == "lost"
    assert a1.healthy_gpus == 7 and snap.gpus_healthy == 7 and snap.gpus_total == 8


def test_an_unchanged_fleet_is_the_same_tuple_of_nodes() -> None:
    board = ShardBoard()
    fleet = [node(f"n{i}", [float(i)] * 8) for i in range(5)]
    feed(board, fleet, 10.0, 1)
    first = board.snapshot(10.5)
    feed(board, fleet, 11.0, 2)
    assert board.snapshot(11.5).nodes is first.nodes


def test_random_ticks_equal_converting_every_node() -> None:
    rng = random.Random(7)
    board = ShardBoard()
    fleet = [node(f"n{i:02d}", [float(rng.randrange(101)) for _ in range(8)]) for i in range(30)]
    for tick in range(12):
        t = 10.0 + tick
        for i in rng.sample(range(30), 10):  # readings of a third move each tick
            utils = [float(rng.randrange(101)) for _ in range(8)]
            verdict = "lost" if rng.random() < 0.2 else "ok"
            fleet[i] = node(fleet[i].name, utils, verdict, t)
        for i in rng.sample(range(30), 10):  # and another third is seen again
            fleet[i] = replace(fleet[i], last_seen=t)
        if tick == 6:
            xid = EventRecord(t, "n03", "xid", gpu=1, code=79, detail="")
            board.apply_events(ShardEvents(1, t, events=(xid,)))
        feed(board, fleet, t, tick + 1)
        snap = board.snapshot(t + 0.5)
        if tick % 3 == 0:  # some ticks drawn (objects built), others not
            for shown in snap.nodes:
                assert shown.gpus and shown.ports
        expected = {s.name: node_from_summary(s) for s in _summaries(fleet, t)}
        for shown in snap.nodes:
            want = expected[shown.name]
            if shown.name == "n03" and tick >= 6:
                want = replace(want, events=shown.events)
                assert len(shown.events) == 1
            assert shown == want
            assert shown.gpu_briefs == want.gpu_briefs and shown.port_briefs == want.port_briefs
            assert shown.healthy_gpus == want.healthy_gpus
    assert board.restamps > 0 and board.conversions < 30 + 12 * 10


def _summaries(fleet: list[NodeSnapshot], t: float) -> tuple[NodeSummary, ...]:
    (one,) = summarize(1, 1, 1, 1.0, fleet, t)
    return decode_summary(one).nodes
