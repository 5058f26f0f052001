"""Forged, unsigned, phantom and flooded summaries through a real nats-server: an
attacker who can publish (a leaked NATS credential, or a server without permissions)
changes nothing a viewer shows, and every drop is counted."""

from __future__ import annotations

import asyncio
import itertools

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from nats.aio.client import Client

from cluster.attach import AttachedFleet
from cluster.board import ShardBoard
from cluster.natsd import LocalNats
from cluster.shards import owner
from cluster.signed_wire import MAX_FLEET_NODES, MAX_PARTS, MAX_SHARDS, owned_events, within_bounds
from cluster.signing import (
    Sealed,
    ShardKeys,
    ShardSigner,
    parse_public_key,
    public_key_text,
    unverified_body,
)
from cluster.wire import (
    NODES_PER_MESSAGE,
    ShardEvents,
    ShardSummary,
    decode_summary,
    summarize,
    summary_subject,
)
from fleet.model import NodeSnapshot, NodeTransition
from tests.cluster.test_board import node

SHARDS = 3
KEYS = [Ed25519PrivateKey.generate() for _ in range(SHARDS)]


def shard_keys() -> ShardKeys:
    return ShardKeys([parse_public_key(public_key_text(key)) for key in KEYS])


def signer(k: int) -> ShardSigner:
    return ShardSigner(k, KEYS[k - 1])


def body(shard: int, nodes: list[NodeSnapshot], seq: int = 1) -> bytes:
    (one,) = summarize(shard, SHARDS, seq, 1.0, nodes, 100.0)
    return one


def owned_by(k: int, prefix: str, count: int) -> list[str]:
    """``count`` node names rendezvous hashing over 3 shards gives to shard ``k``."""
    names = (f"{prefix}-{i:05d}" for i in range(100_000))
    return list(itertools.islice((n for n in names if owner(n, SHARDS) == k), count))


class LastSummaryBoard(ShardBoard):
    """Sets ``arrived`` when the summary numbered ``LAST_SEQ`` is applied (the attacker
    sends it last on the same connection, and NATS keeps a connection's order)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = asyncio.Event()

    def apply_summary(self, summary: ShardSummary, now: float) -> None:
        super().apply_summary(summary, now)
        if summary.seq == LAST_SEQ:
            self.arrived.set()


LAST_SEQ = 99_999
FLOOD_SHARDS = 238


async def test_forged_unsigned_phantom_and_flooded_summaries_are_dropped_and_counted(
    nats_server: LocalNats,
) -> None:
    good, other = owned_by(2, "gpu", 1)[0], owned_by(1, "gpu", 1)[0]
    viewer = AttachedFleet(nats_server.url, tick_s=3600, keys=shard_keys())
    viewer.board = board = LastSummaryBoard()
    attacker = Client()
    await viewer.start()
    await attacker.connect(nats_server.url)
    try:
        subject = summary_subject(2)
        forged = body(2, [node(good, verdict="lost", state="broken")])
        impostor = ShardSigner(2, Ed25519PrivateKey.generate())
        await attacker.publish(subject, forged)  # unsigned
        await attacker.publish(subject, impostor.seal(forged))  # signed, by a key not shard 2's
        await attacker.publish(subject, msgspec.msgpack.encode(Sealed(7, forged, b"x" * 64)))
        # Shard 1's real key, claiming shard 2, then claiming a node of shard 2's.
        await attacker.publish(subject, signer(1).seal(forged))
        theirs = body(1, [node(other), node(good, verdict="lost", state="broken")])
        await attacker.publish(summary_subject(1), signer(1).seal(theirs))
        phantoms = [node(f"phantom-{i:05d}") for i in range(200)]
        for start in range(0, 2000, 200):  # 10 unsigned floods of 200 phantom nodes
            await attacker.publish(subject, body(2, phantoms, seq=start))
        await attacker.publish(subject, signer(2).seal(body(2, [node(good)], seq=LAST_SEQ)))
        await attacker.flush()
        await asyncio.wait_for(board.arrived.wait(), 20)
    finally:
        await attacker.close()
        await viewer.stop()

    shown = viewer.board.snapshot(100.0)
    assert sorted(n.name for n in shown.nodes) == sorted([good, other])
    assert shown.node(good).state == "up"  # type: ignore[union-attr]
    assert viewer.dropped == {
        "unsigned": 11,
        "bad signature": 1,
        "unknown shard": 1,
        "claims another shard": 1,
        "node not the shard's": 1,
    }


def test_events_for_another_shards_nodes_are_dropped() -> None:
    keys = shard_keys()
    mine, theirs = owned_by(1, "gpu", 1)[0], owned_by(3, "gpu", 1)[0]
    batch = ShardEvents(
        1,
        100.0,
        transitions=(NodeTransition(mine, "broken", 99.0), NodeTransition(theirs, "broken", 99.0)),
    )
    kept = owned_events(keys, 1, batch)
    assert kept is not None and [t.node for t in kept.transitions] == [mine]
    assert owned_events(keys, 2, batch) is None
    assert keys.dropped == {"node not the shard's": 1, "claims another shard": 1}


def test_a_viewer_without_keys_reads_sealed_and_plain_messages_alike() -> None:
    plain = body(2, [node("gpu-00001")])
    assert unverified_body(signer(2).seal(plain)) == plain
    assert unverified_body(plain) == plain


def test_summaries_beyond_the_limits_are_not_kept() -> None:
    ok = decode_summary(body(2, [node("gpu-00001")]))
    assert within_bounds(ok, 0)
    assert not within_bounds(msgspec.structs.replace(ok, shard=4), 0)  # shard 4 of 3
    # No "shard 0": the viewer would ask it for a ledger and take that shard's contract.
    assert not within_bounds(msgspec.structs.replace(ok, shard=0), 0)
    assert not within_bounds(msgspec.structs.replace(ok, count=MAX_SHARDS + 1), 0)
    assert not within_bounds(msgspec.structs.replace(ok, part=MAX_PARTS, parts=MAX_PARTS + 1), 0)
    assert not within_bounds(ok, MAX_FLEET_NODES)  # the viewer holds as many as it will


async def test_a_flood_of_made_up_shards_grows_the_viewer_no_further(
    nats_server: LocalNats,
) -> None:
    """No keys configured (the weakest viewer): bounds still hold."""
    assert FLOOD_SHARDS * NODES_PER_MESSAGE > MAX_FLEET_NODES and FLOOD_SHARDS <= MAX_SHARDS
    viewer = AttachedFleet(nats_server.url, tick_s=3600)
    viewer.board = board = LastSummaryBoard()
    flood = Client()
    await viewer.start()
    await flood.connect(nats_server.url)
    try:
        many = [node(f"phantom-{i:05d}") for i in range(NODES_PER_MESSAGE)]
        for k in range(1, FLOOD_SHARDS + 1):  # 238 shards x 250 nodes: 59,500 phantom nodes
            (part,) = summarize(k, MAX_SHARDS, 1, 1.0, many, 100.0)
            await flood.publish(summary_subject(k), part)
        (last,) = summarize(1, MAX_SHARDS, LAST_SEQ, 1.0, many[:1], 100.0)
        await flood.publish(summary_subject(1), last)
        await flood.flush()
        await asyncio.wait_for(board.arrived.wait(), 60)
    finally:
        await flood.close()
        await viewer.stop()
    assert board.nodes_held(0, 0) <= MAX_FLEET_NODES
    assert viewer.dropped["out of bounds"] == FLOOD_SHARDS - MAX_FLEET_NODES // NODES_PER_MESSAGE
