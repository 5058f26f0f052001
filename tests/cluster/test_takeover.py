"""Takeover by rendezvous hashing over the live shards, pure: who adopts a silent
shard's nodes, when a peer counts as silent, and what a viewer accepts from an adopter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import ClassVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from cluster.shards import ShardSpec, owner, owner_among
from cluster.signed_wire import owned_events, owned_summary
from cluster.signing import ShardKeys, ShardSigner, parse_public_key, public_key_text
from cluster.takeover import (
    Heartbeat,
    PeerWatch,
    Takeover,
    adopted_hosts,
    summary_with_adopted,
)
from cluster.wire import ShardEvents, decode_summary, encode
from collectors.ssh.target import NodeTarget
from fleet.model import FleetSnapshot, NodeTransition, UtilizationSummary
from tests.cluster.test_board import node

HOSTS = [f"gpu-{i:04d}" for i in range(600)]
SHARDS = 5


def test_only_the_silent_shards_hosts_move_and_every_live_shard_agrees() -> None:
    for silent in ({3}, {1, 4}):
        live = [k for k in range(1, SHARDS + 1) if k not in silent]
        adopted = {me: adopted_hosts(HOSTS, me, SHARDS, silent) for me in live}
        taken = [h for by_shard in adopted.values() for hosts in by_shard.values() for h in hosts]
        orphans = [h for h in HOSTS if owner(h, SHARDS) in silent]
        # Each orphan is adopted exactly once, by the shard every live shard computes.
        assert sorted(taken) == sorted(orphans)
        for me, by_shard in adopted.items():
            for home, hosts in by_shard.items():
                assert home in silent
                assert all(owner(h, SHARDS) == home and owner_among(h, live) == me for h in hosts)
        # No host of a live shard moves: over the live shards it keeps its owner.
        assert all(owner_among(h, live) == owner(h, SHARDS) for h in HOSTS if h not in orphans)
        # The orphans spread: every live shard takes some (600 hosts, 1-2 silent of 5).
        assert all(adopted[me] for me in live)


def test_a_silent_shard_adopts_nothing_and_nobody_silent_moves_nothing() -> None:
    assert adopted_hosts(HOSTS, 3, SHARDS, {3}) == {}
    assert adopted_hosts(HOSTS, 2, SHARDS, set()) == {}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def beat(shard: int, adopting: tuple[int, ...] = (), count: int = 3) -> bytes:
    return encode(Heartbeat(shard, count, 1, 0.0, adopting))


def test_a_peer_is_silent_after_takeover_after_s_while_this_shard_hears_itself() -> None:
    clock = Clock()
    watch = PeerWatch(ShardSpec(1, 3), after_s=10.0, period_s=1.0, clock=clock)
    for _ in range(12):  # never hearing itself (no NATS, or no permission): no takeover
        clock.t += 1.0
        assert watch.silent() == frozenset()
    watch.heard(beat(1))
    watch.heard(beat(2))
    assert watch.silent() == {3}  # never heard since the start, 12 s ago
    for _ in range(10):
        clock.t += 1.0
        watch.heard(beat(1))
        watch.heard(beat(3))
        assert watch.silent() == frozenset()  # 2 was heard at most 10 s ago
    clock.t += 1.0
    watch.heard(beat(1))
    assert watch.silent() == {2}  # 3 heard a second ago, 2 not for 11 s


def test_this_shards_own_stall_is_not_its_peers_silence() -> None:
    clock = Clock()
    watch = PeerWatch(ShardSpec(1, 3), after_s=10.0, period_s=1.0, clock=clock)
    watch.heard(beat(1))
    watch.heard(beat(2))
    watch.heard(beat(3))
    clock.t += 60.0  # SIGSTOPped for a minute: nothing was read, nothing was checked
    assert watch.silent() == frozenset()
    for _ in range(11):  # and after it, a peer that stays silent is silent again
        clock.t += 1.0
        watch.heard(beat(1))
        watch.heard(beat(2))
        silent = watch.silent()
    assert silent == {3}


KEYS = [Ed25519PrivateKey.generate() for _ in range(3)]


def keys() -> ShardKeys:
    return ShardKeys([parse_public_key(public_key_text(k)) for k in KEYS])


def test_signed_heartbeats_only_from_their_own_shard_count() -> None:
    clock = Clock()
    watch = PeerWatch(ShardSpec(1, 3), 10.0, 1.0, keys=keys(), clock=clock)
    assert watch.heard(beat(2)) is None  # unsigned
    assert watch.heard(ShardSigner(3, KEYS[2]).seal(beat(2))) is None  # 3 speaking for 2
    assert watch.heard(ShardSigner(2, KEYS[2]).seal(beat(2))) is None  # 2 with 3's key
    assert watch.heard(ShardSigner(2, KEYS[1]).seal(beat(2, count=4))) is None
    assert watch.dropped == 4
    assert watch.heard(ShardSigner(2, KEYS[1]).seal(beat(2, (3,)), (3,))) == 2
    assert watch.claims[2] == (3,)


def names_of(k: int, count: int) -> list[str]:
    return [h for h in HOSTS if owner(h, 3) == k][:count]


def test_a_viewer_takes_an_adopted_node_only_while_it_sees_the_owner_silent() -> None:
    viewer = keys()
    orphan = names_of(3, 1)[0]
    adopter = owner_among(orphan, [1, 2])
    other = 3 - adopter
    sealed = ShardSigner(adopter, KEYS[adopter - 1]).seal(b"\x90", (3,))
    assert viewer.open(sealed) == (adopter, b"\x90")
    assert viewer.owns(adopter, orphan, silent={3})
    assert not viewer.owns(adopter, orphan, silent=())  # the viewer still hears shard 3
    assert not viewer.owns(other, orphan, silent={3})  # not the adopter hashing picks
    # Claiming a live shard's node: dropped, whatever the claim says.
    live_node = names_of(other, 1)[0]
    assert not viewer.owns(adopter, live_node, silent={3})
    assert viewer.dropped["node not the shard's"] == 3
    # Claiming shard 3 silent while the viewer hears it: nothing adopted is taken.
    plain = ShardSigner(adopter, KEYS[adopter - 1]).seal(b"\x90")
    assert viewer.open(plain) == (adopter, b"\x90")
    assert not viewer.owns(adopter, orphan, silent={3})  # no claim in its latest message


def test_the_claim_is_signed() -> None:
    viewer = keys()
    sealed = ShardSigner(1, KEYS[0]).seal(b"\x90", (3,))
    # The same bytes with the claim cut off (the shorter envelope) fail the signature.
    forged = bytes([0x93]) + sealed[1:-2]  # (3,) is two bytes: 0x91 0x03
    assert viewer.open(forged) is None
    assert viewer.dropped["bad signature"] == 1
    # A message without a claim keeps the three-field envelope every viewer reads.
    assert ShardSigner(1, KEYS[0]).seal(b"\x90")[0] == 0x93


def test_adopted_nodes_ride_in_the_shards_own_summary() -> None:
    own = FleetSnapshot(10.0, (node("a"),), UtilizationSummary(None, 50.0, 40.0))
    adopted = FleetSnapshot(10.2, (node("b"), node("c")))
    (part,) = summary_with_adopted(ShardSpec(2, 3), 7, 1.0, own, [adopted])
    summary = decode_summary(part)
    assert (summary.shard, summary.count, summary.seq, summary.taken_at) == (2, 3, 7, 10.0)
    assert [n.name for n in summary.nodes] == ["a", "b", "c"]
    assert (summary.util_1h, summary.util_24h) == (50.0, 40.0)


class Foster:
    """A fleet of adopted nodes that records being started and stopped."""

    log: ClassVar[list[tuple[str, tuple[str, ...]]]] = []

    def __init__(self, targets: Sequence[NodeTarget]) -> None:
        self.names = tuple(t.name for t in targets)

    async def start(self) -> None:
        Foster.log.append(("start", self.names))

    async def stop(self) -> None:
        Foster.log.append(("stop", self.names))

    def latest(self) -> FleetSnapshot | None:
        return FleetSnapshot(0.0, tuple(node(n) for n in self.names))

    def subscribe(self, listener: Callable[[FleetSnapshot], None]) -> Callable[[], None]:
        return lambda: None


async def test_takeover_adopts_on_silence_and_hands_back_when_heard() -> None:
    clock = Clock()
    Foster.log = []
    targets = [NodeTarget(name=h, host="127.0.0.1") for h in HOSTS[:60]]
    takeover = Takeover(ShardSpec(1, 3), targets, 10.0, 1.0, Foster, clock=clock)
    mine = adopted_hosts(HOSTS[:60], 1, 3, {2})[2]
    own = sum(1 for h in HOSTS[:60] if owner(h, 3) == 1)
    for _ in range(11):
        clock.t += 1.0
        for k in (1, 3):
            takeover.heard(beat(k))
        await takeover.reconcile()
    assert takeover.adopting == (2,) and Foster.log == [("start", tuple(mine))]
    assert takeover.sessions == own + len(mine)
    assert [n.name for s in takeover.snapshots() for n in s.nodes] == mine
    takeover.heard(beat(2))  # back: handed back at the next check
    await takeover.reconcile()
    assert takeover.adopting == () and Foster.log[-1] == ("stop", tuple(mine))
    assert takeover.sessions == own and takeover.snapshots() == []
    await asyncio.sleep(0)


def test_an_adopters_signed_summary_keeps_the_adopted_node_only_while_its_owner_is_silent() -> None:
    orphan, own = names_of(3, 1)[0], names_of(1, 1)[0]
    adopter = owner_among(orphan, [1, 2])
    mine = own if adopter == 1 else names_of(2, 1)[0]
    snapshot = FleetSnapshot(10.0, (node(mine),))
    (part,) = summary_with_adopted(ShardSpec(adopter, 3), 1, 1.0, snapshot, [
        FleetSnapshot(10.0, (node(orphan),))
    ])  # fmt: skip
    sealed = ShardSigner(adopter, KEYS[adopter - 1]).seal(part, (3,))
    viewer = keys()
    opened = viewer.open(sealed)
    assert opened is not None
    summary = decode_summary(opened[1])
    kept = owned_summary(viewer, adopter, summary, silent=[3])
    assert kept is not None and [n.name for n in kept.nodes] == [mine, orphan]
    kept = owned_summary(viewer, adopter, summary, silent=[])
    assert kept is not None and [n.name for n in kept.nodes] == [mine]
    batch = ShardEvents(adopter, 10.0, transitions=(NodeTransition(orphan, "up", 10.0),))
    assert owned_events(viewer, adopter, batch, silent=[3]) == batch
    assert owned_events(viewer, adopter, batch).transitions == ()  # type: ignore[union-attr]
