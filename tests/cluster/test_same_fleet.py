"""The attached view is the fleet one collector shows: every per-node field of the JSON
crosses the wire, the header's 1 h/24 h utilization is the shards' joined, and the
event log holds a GPU transition once, not once per tick."""

from __future__ import annotations

from dataclasses import replace

from bench.lib.fleet_states import state_ticks
from cluster.board import ShardBoard
from cluster.wire import (
    NODES_PER_MESSAGE,
    ShardSummary,
    decode_summary,
    node_from_summary,
    summarize,
)
from fleet.event_log import SessionLog
from fleet.model import FleetSnapshot, UtilizationSummary
from gpufleet.attach import node_json
from testkit.snapshots import T0


def lose_gpu_3_of_node_2(line: bytes, node: int, tick: int) -> bytes:
    import json

    if node == 1 and tick >= 2:
        sample = json.loads(line)
        sample["gpus"][3] = None
        return json.dumps(sample).encode() + b"\n"
    return line


def through_the_wire(snap: FleetSnapshot) -> list[ShardSummary]:
    parts = summarize(2, 3, 1, 1.0, snap.nodes, snap.taken_at, snap.columns, snap.utilization)
    return [decode_summary(p) for p in parts]


def test_every_field_of_a_node_crosses_the_wire_as_the_collector_has_it() -> None:
    snap = state_ticks(4, 3, lose_gpu_3_of_node_2, t0=T0)[-1]
    (part,) = through_the_wire(snap)
    for sent, summary in zip(snap.nodes, part.nodes, strict=True):
        want, got = node_json(sent), node_json(node_from_summary(summary))
        assert got == want
    one = node_json(snap.nodes[0])
    # Not a comparison of N/As: the canned nodes report every one of these.
    gpu, port = one["gpus"][0], one["ports"][0]
    for key in ("uuid", "mem_used_bytes", "memory_total_bytes", "power_w", "temp_c"):
        assert gpu[key] not in (None, ""), key
    assert port["state"] is not None and port["rate_gbps"] is not None
    assert node_json(snap.nodes[1])["gpus"][3]["since"] is not None  # the lost GPU's age


def test_the_header_averages_are_the_shards_joined_by_their_gpus() -> None:
    snap = state_ticks(3, 2, t0=T0)[-1]
    # Shard 1 holds 2 nodes (16 GPUs) at 40 % over the hour, shard 2 one node at 70 %:
    # (16 x 40 + 8 x 70) / 24 = 50 %; over the day 20 % and 80 %: (320 + 640) / 24 = 40 %.
    one = summarize(1, 2, 1, 1.0, snap.nodes[:2], T0, None, UtilizationSummary(None, 40.0, 20.0))
    two = summarize(2, 2, 1, 1.0, snap.nodes[2:], T0, None, UtilizationSummary(None, 70.0, 80.0))
    board = ShardBoard()
    for data in (*one, *two):
        board.apply_summary(decode_summary(data), T0)
    utilization = board.snapshot(T0 + 1).utilization
    assert utilization.avg_1h == 50.0 and utilization.avg_24h == 40.0
    assert board.snapshot(T0 + 60).utilization.avg_1h is None  # both silent: no figure


def test_a_gpu_transition_is_logged_once_not_every_tick() -> None:
    ticks = state_ticks(3, 6, lose_gpu_3_of_node_2, t0=T0)
    board, log = ShardBoard(), SessionLog()
    for k, snap in enumerate(ticks, start=1):
        for part in through_the_wire(replace(snap, taken_at=T0 + k)):
            board.apply_summary(part, T0 + k)
        log.observe(board.snapshot(T0 + k))
    lost = [e for e in log.entries if e.kind == "gpu"]
    assert [(e.node, e.gpu, e.verdict) for e in lost] == [("node-002", 3, "lost")]


def test_an_encoded_summary_stays_below_the_nats_limit_with_the_readings() -> None:
    snap = state_ticks(NODES_PER_MESSAGE, 2, t0=T0)[-1]
    (part,) = summarize(1, 1, 1, 1.0, snap.nodes, snap.taken_at, snap.columns, snap.utilization)
    assert len(part) < 1 << 20
