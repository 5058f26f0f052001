"""The attached view's rules on decoded summaries: silence, ownership, detail, hostile bytes."""

from __future__ import annotations

from dataclasses import replace

import msgspec
import pytest

from cluster.board import ShardBoard, fleet_utilization
from cluster.wire import (
    ShardEvents,
    decode_events,
    decode_node,
    decode_summary,
    encode,
    summarize,
)
from fleet.model import EventRecord, GpuSnapshot, NodeSnapshot, NodeTransition, PortSnapshot


def node(name: str, *, verdict: str = "ok", state: str = "up", util: float = 50.0) -> NodeSnapshot:
    gpus = tuple(
        GpuSnapshot(i, f"GPU-{name}-{i}", "H100", util_gpu=util, verdict="ok") for i in range(8)
    )
    if verdict != "ok":
        gpus = (GpuSnapshot(0, "x", "H100", verdict=verdict, reasons=("XID 79",)), *gpus[1:])
    port = PortSnapshot("mlx5_0/1", "ib", state="ACTIVE", verdict="ok")
    return NodeSnapshot(name, "streaming", state=state, gpus=gpus, ports=(port,))  # type: ignore[arg-type]


def summary(shard: int, nodes: list[NodeSnapshot], at: float, seq: int = 1) -> bytes:
    (one,) = summarize(shard, 3, seq, 1.0, nodes, at)
    return one


def test_summary_round_trip_keeps_what_the_grid_needs() -> None:
    sent = node("gpu-001", verdict="lost", state="broken")
    got = decode_summary(summary(2, [sent], 100.0))
    board = ShardBoard()
    board.apply_summary(got, now=100.0)
    shown = board.snapshot(100.5).node("gpu-001")
    assert shown is not None and shown.state == "broken" and shown.status == "streaming"
    assert [g.verdict for g in shown.gpus] == ["lost"] + ["ok"] * 7
    assert shown.gpus[0].reasons == ("XID 79",) and shown.gpus[1].util_gpu == 50.0
    assert shown.ports[0].name == "mlx5_0/1" and shown.ports[0].verdict == "ok"
    assert board.owner_of("gpu-001") == 2


def test_a_silent_shard_turns_its_nodes_unmonitored_and_back() -> None:
    board = ShardBoard(stale_intervals=3.0)
    board.apply_summary(decode_summary(summary(1, [node("a")], 10.0)), now=10.0)
    board.apply_summary(decode_summary(summary(2, [node("b")], 10.0)), now=10.0)
    board.apply_summary(decode_summary(summary(2, [node("b")], 13.5, seq=2)), now=13.5)
    snap = board.snapshot(now=13.6)
    a, b = snap.node("a"), snap.node("b")
    assert a is not None and b is not None
    assert a.status == "unmonitored" and "shard 1/3 silent" in a.status_reason
    assert all(g.verdict == "unknown" for g in a.gpus) and not a.broken
    assert b.status == "streaming"
    assert board.silent_shards(13.6) == [1]
    # The shard restarts: its sequence starts over and is taken all the same.
    board.apply_summary(decode_summary(summary(1, [node("a")], 14.0, seq=1)), now=14.0)
    a = board.snapshot(now=14.1).node("a")
    assert a is not None and a.status == "streaming"


def test_a_node_moved_to_another_shard_is_shown_once_from_the_newest_report() -> None:
    board = ShardBoard()
    board.apply_summary(decode_summary(summary(1, [node("a", util=10)], 10.0)), now=10.0)
    board.apply_summary(decode_summary(summary(3, [node("a", util=90)], 11.0)), now=11.0)
    snap = board.snapshot(11.1)
    assert [n.name for n in snap.nodes] == ["a"]
    assert snap.nodes[0].gpus[0].util_gpu == 90 and board.owner_of("a") == 3


def test_detail_adds_telemetry_but_the_summary_keeps_the_verdicts() -> None:
    board = ShardBoard()
    full = NodeSnapshot(
        "a", "streaming", state="up", driver="550.54", gpus=(GpuSnapshot(0, "GPU-x", "H100"),)
    )
    detail = decode_node(encode(full))
    assert detail == full
    board.apply_summary(decode_summary(summary(1, [node("a", state="broken")], 10.0)), now=10.0)
    board.apply_detail(detail, now=10.0)
    shown = board.snapshot(10.5).node("a")
    assert shown is not None and shown.driver == "550.54" and shown.state == "broken"
    stale_detail = board.snapshot(30.0).node("a")
    assert stale_detail is not None and stale_detail.driver is None


def test_events_fill_node_screens_and_only_live_ones_are_new() -> None:
    board = ShardBoard()
    board.apply_summary(decode_summary(summary(1, [node("a")], 10.0)), now=10.0)
    old = EventRecord(1.0, "a", "xid", gpu=3, code=79, detail="fallen off the bus")
    new = EventRecord(9.0, "a", "xid", gpu=4, code=48)
    change = NodeTransition("a", "broken", 9.0, ("GPU 4 failed",))
    board.apply_events(decode_events(encode(ShardEvents(1, 1.0, events=(old,)))), live=False)
    board.apply_events(decode_events(encode(ShardEvents(1, 9.0, (change,), (new,)))), live=True)
    snap = board.snapshot(10.0)
    a = snap.node("a")
    assert a is not None and a.events == (old, new)
    assert snap.new_events == (new,) and snap.transitions == (change,)
    assert board.snapshot(11.0).new_events == ()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc1",
        msgspec.msgpack.encode(
            [1, 3, 1, 1.0, 1.0, [["a", "on-fire", "", "up", [], None, None, 8]]]
        ),
        msgspec.msgpack.encode([1, 3, 1, 1.0, 1.0, "nodes"]),
    ],
)
def test_malformed_summaries_are_rejected_whole(data: bytes) -> None:
    with pytest.raises((msgspec.DecodeError, msgspec.ValidationError)):
        decode_summary(data)


def test_a_summary_is_compact_and_large_shards_are_split_below_the_nats_limit() -> None:
    # Field names are not repeated per node: an 8-GPU node costs a few hundred bytes
    data = summary(1, [node(f"gpu-{i:05d}") for i in range(100)], 1.0)
    assert len(data) / 100 < 400
    parts = summarize(2, 3, 7, 1.0, [node(f"gpu-{i:05d}") for i in range(1234)], 5.0)
    assert len(parts) == 5 and max(map(len, parts)) < 1 << 20
    board = ShardBoard()
    for part in parts:
        board.apply_summary(decode_summary(part), now=5.0)
    assert len(board.snapshot(5.5).nodes) == 1234
    # The shard shrinks to one part: the old parts' nodes leave with it, not unmonitored.
    (small,) = summarize(2, 3, 8, 1.0, [node("gpu-00000")], 6.0)
    board.apply_summary(decode_summary(small), now=6.0)
    assert [n.name for n in board.snapshot(6.5).nodes] == ["gpu-00000"]


def test_only_nodes_whose_summary_changed_are_converted_again() -> None:
    board = ShardBoard()
    fleet = [node(f"n{i:02d}", util=10.0 * i) for i in range(10)]
    board.apply_summary(decode_summary(summary(1, fleet, 10.0)), now=10.0)
    first = board.snapshot(10.1)
    assert board.conversions == 10
    # Next tick: the shard sends every node again; one GPU of one node changed.
    fleet[3] = node("n03", verdict="lost", state="broken", util=30.0)
    board.apply_summary(decode_summary(summary(1, fleet, 11.0, seq=2)), now=11.0)
    second = board.snapshot(11.1)
    assert board.conversions == 11
    assert [a is b for a, b in zip(first.nodes, second.nodes, strict=True)].count(False) == 1
    shown = second.node("n03")
    assert shown is not None and shown.state == "broken" and shown.gpus[0].verdict == "lost"
    assert second.utilization.now == pytest.approx(fleet_utilization(second.nodes))
    # An event for a node is a change too: its node screen lists it.
    xid = EventRecord(11.5, "n05", "xid", gpu=2, code=79, detail="")
    board.apply_events(ShardEvents(1, 11.5, events=(xid,)))
    third = board.snapshot(11.6)
    assert board.conversions == 12
    n05 = third.node("n05")
    assert n05 is not None and n05.events == (xid,)
    # Silence: every node of the shard is shown unmonitored, with its own utilization.
    silent = board.snapshot(30.0)
    assert all(n.status == "unmonitored" for n in silent.nodes)
    assert silent.utilization.now is None


def test_a_new_last_seen_alone_is_not_a_conversion_but_is_shown() -> None:
    board = ShardBoard()
    fleet = [replace(node(f"n{i}"), last_seen=10.0) for i in range(4)]
    board.apply_summary(decode_summary(summary(1, fleet, 10.0)), now=10.0)
    first = board.snapshot(10.1)
    fleet = [replace(n, last_seen=11.0) for n in fleet]  # every sample moves it
    board.apply_summary(decode_summary(summary(1, fleet, 11.0, seq=2)), now=11.0)
    second = board.snapshot(11.1)
    assert board.conversions == 4
    assert [n.last_seen for n in second.nodes] == [11.0] * 4
    assert [n.gpus for n in second.nodes] == [n.gpus for n in first.nodes]
    assert second.nodes[0].gpus[0] is first.nodes[0].gpus[0]  # not rebuilt
