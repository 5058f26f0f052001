"""Takeover: the live shards collect a silent shard's nodes, and hand them back.

Every shard publishes a small heartbeat each tick on ``gpufleet.alive.K`` (signed like
its summaries) and follows every other shard's. A shard not heard for ``[cluster]
takeover_after_s`` is silent, and each of its nodes is collected by the live shard
that rendezvous hashing over the live shards scores highest
(:func:`cluster.shards.owner_among`): every live shard computes the same adopter
without talking to the others, the silent shard's nodes spread over them, and no node
of a live shard moves. The moment the silent shard is heard again its adopters stop
collecting its nodes, so a node is collected twice for at most one handover.

The adopted nodes run in a fleet of their own per silent shard (``FosterFleet``, a
``FleetRuntime`` without history: the shard's history holds its own nodes, and the
ledger keeps the silent shard's nodes unmonitored, "shard K/N silent"). Their
snapshots join the shard's summaries and event batches, whose envelopes say which
shards it stands in for (``Sealed.adopting``), so viewers can check the claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import msgspec

from cluster.shards import ShardSpec, owner, owner_among
from cluster.signing import ShardKeys, unverified_body
from cluster.wire import (
    NODES_PER_MESSAGE,
    SUBJECT_ROOT,
    ShardSummary,
    encode,
    summarize_node,
)
from collectors.ssh.target import NodeTarget
from fleet.model import FleetSnapshot

log = logging.getLogger(__name__)

HEARTBEAT_WILDCARD = f"{SUBJECT_ROOT}.alive.*"
# A check that comes this many periods late means this process itself stood still
# (SIGSTOP, a swapped-out host): what it did not hear then is not the peers' silence.
STALL_PERIODS = 3.0


def heartbeat_subject(shard: int) -> str:
    """Core NATS subject of shard ``shard``'s heartbeats."""
    return f"{SUBJECT_ROOT}.alive.{shard}"


class Heartbeat(msgspec.Struct, array_like=True, frozen=True):
    """Shard ``shard`` of ``count`` is alive at ``taken_at`` (tick ``seq``); it stands in
    for the shards ``adopting`` and runs ``sessions`` node sessions, its own and adopted."""

    shard: int
    count: int
    seq: int
    taken_at: float
    adopting: tuple[int, ...] = ()
    sessions: int = 0


_HEARTBEAT = msgspec.msgpack.Decoder(Heartbeat)


def decode_heartbeat(data: bytes) -> Heartbeat:
    """A heartbeat's body. Raises msgspec.DecodeError / ValidationError when malformed."""
    return _HEARTBEAT.decode(data)


def adopted_hosts(
    hosts: Iterable[str], me: int, count: int, silent: Collection[int]
) -> dict[int, list[str]]:
    """The hosts shard ``me`` collects for each ``silent`` shard, by that shard.

    A host of a silent shard goes to the live shard that scores it highest; with every
    shard silent but none live, or ``me`` among the silent, nothing is adopted.
    """
    live = [k for k in range(1, count + 1) if k not in silent]
    if me not in live:
        return {}
    out: dict[int, list[str]] = {}
    for host in hosts:
        home = owner(host, count)
        if home in silent and owner_among(host, live) == me:
            out.setdefault(home, []).append(host)
    return out


class PeerWatch:
    """When every other shard was last heard, and which are silent.

    Args:
        spec: this shard.
        after_s: silence after which a shard's nodes are taken over.
        period_s: how often :meth:`silent` is asked (a check far later than that is
            this process's own stall, and the peers get a new ``after_s``).
        keys: the shards' public keys; given, only heartbeats their shard signed count.
        clock: monotonic seconds (silence is measured here, not in the peers' clocks).
    """

    def __init__(
        self,
        spec: ShardSpec,
        after_s: float,
        period_s: float,
        keys: ShardKeys | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec
        self.after_s = after_s
        self._period_s = period_s
        self._keys = keys
        self._clock = clock
        now = clock()
        # A shard never heard since this one started is silent after_s from the start;
        # this shard's own heartbeats, echoed by NATS, say that it hears at all.
        self._heard = {k: now for k in range(1, spec.count + 1) if k != spec.index}
        self._heard_self = float("-inf")
        self._checked = now
        self.claims: dict[int, tuple[int, ...]] = {}  # whom each shard stands in for
        self.dropped = 0  # heartbeats malformed, unsigned, or not a peer's

    def heard(self, data: bytes) -> int | None:
        """Take a heartbeat as it came from NATS; the shard heard, or None if dropped."""
        if self._keys is None:
            signer, body = None, unverified_body(data)
        else:
            opened = self._keys.open(data)
            if opened is None:
                self.dropped += 1
                return None
            signer, body = opened
        try:
            beat = decode_heartbeat(body)
        except (msgspec.DecodeError, msgspec.ValidationError):
            self.dropped += 1
            return None
        foreign = signer is not None and signer != beat.shard
        if foreign or beat.count != self.spec.count:
            self.dropped += 1
            return None
        if beat.shard == self.spec.index:
            self._heard_self = self._clock()
            return None
        if beat.shard not in self._heard:
            self.dropped += 1
            return None
        self._heard[beat.shard] = self._clock()
        self.claims[beat.shard] = beat.adopting
        return beat.shard

    def silent(self) -> frozenset[int]:
        """The other shards not heard for ``after_s``; none while this shard's own
        heartbeats do not come back (cut off from NATS, or not allowed to publish or
        subscribe heartbeats, it would take every node while no shard is gone)."""
        now = self._clock()
        if now - self._checked > STALL_PERIODS * self._period_s:
            # This process stood still: heartbeats may be waiting unread in its socket.
            for k, at in self._heard.items():
                self._heard[k] = max(at, now - self._period_s)
            if self._heard_self > float("-inf"):
                self._heard_self = max(self._heard_self, now - self._period_s)
        self._checked = now
        if now - self._heard_self > self.after_s:
            return frozenset()
        return frozenset(k for k, at in self._heard.items() if now - at > self.after_s)


def summary_with_adopted(
    spec: ShardSpec,
    seq: int,
    interval: float,
    snapshot: FleetSnapshot,
    adopted: Sequence[FleetSnapshot],
) -> list[bytes]:
    """Encoded summary parts of the shard's own nodes and the adopted ones (each node's
    readings from its own fleet's columns), as ``cluster.wire.summarize`` splits them."""
    compact = [summarize_node(node, snapshot.columns) for node in snapshot.nodes]
    for foster in adopted:
        compact.extend(summarize_node(node, foster.columns) for node in foster.nodes)
    hour, day = snapshot.utilization.avg_1h, snapshot.utilization.avg_24h
    parts = max(1, -(-len(compact) // NODES_PER_MESSAGE))
    return [
        encode(
            ShardSummary(
                spec.index,
                spec.count,
                seq,
                snapshot.taken_at,
                interval,
                tuple(compact[i * NODES_PER_MESSAGE : (i + 1) * NODES_PER_MESSAGE]),
                i,
                parts,
                hour,
                day,
            )
        )
        for i in range(parts)
    ]


class FosterFleet(Protocol):
    """A fleet of adopted nodes (``FleetRuntime`` without history, in ``serve``)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def latest(self) -> FleetSnapshot | None: ...

    def subscribe(self, listener: Callable[[FleetSnapshot], None]) -> Callable[[], None]: ...


FosterFactory = Callable[[Sequence[NodeTarget]], FosterFleet]


@dataclass(frozen=True)
class Fostered:
    """The nodes of one silent shard this shard collects, and the fleet collecting them."""

    shard: int
    names: frozenset[str]
    fleet: FosterFleet
    unsubscribe: Callable[[], None]


class Takeover:
    """Adopts silent shards' nodes and hands them back (see the module docstring).

    Args:
        spec: this shard.
        targets: every shard's targets (a shard must reach any node it may adopt).
        after_s: ``[cluster] takeover_after_s``.
        period_s: how often silence is checked (the shard's tick interval).
        start_fleet: makes the fleet that collects a set of adopted targets.
        keys: the shards' public keys, to check heartbeats.
        clock: monotonic seconds.
    """

    def __init__(
        self,
        spec: ShardSpec,
        targets: Sequence[NodeTarget],
        after_s: float,
        period_s: float,
        start_fleet: FosterFactory,
        *,
        keys: ShardKeys | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec
        self.peers = PeerWatch(spec, after_s, period_s, keys, clock)
        self._targets = {t.name: t for t in targets}
        self._own = sum(1 for name in self._targets if owner(name, spec.count) == spec.index)
        self._period_s = period_s
        self._start_fleet = start_fleet
        self._fostered: dict[int, Fostered] = {}
        self._wake = asyncio.Event()
        self.listener: Callable[[FleetSnapshot], None] | None = None  # adopted snapshots
        self.adoptions = 0  # fleets started for silent shards, since the start
        self.handbacks = 0  # and stopped

    @property
    def adopting(self) -> tuple[int, ...]:
        """The silent shards whose nodes this shard collects now."""
        return tuple(sorted(self._fostered))

    @property
    def sessions(self) -> int:
        """Node sessions this shard runs: its own nodes and the adopted ones."""
        return self._own + sum(len(f.names) for f in self._fostered.values())

    def snapshots(self) -> list[FleetSnapshot]:
        """The newest snapshot of each adopted set of nodes (in shard order)."""
        out = []
        for k in sorted(self._fostered):
            latest = self._fostered[k].fleet.latest()
            if latest is not None:
                out.append(latest)
        return out

    def fleet_of(self, node: str) -> FosterFleet | None:
        """The fleet collecting ``node`` for its silent shard, or None when not adopted."""
        for fostered in self._fostered.values():
            if node in fostered.names:
                return fostered.fleet
        return None

    def heard(self, data: bytes) -> None:
        """A heartbeat from NATS; a shard whose nodes are held here is handed back now."""
        shard = self.peers.heard(data)
        if shard is not None and shard in self._fostered:
            self._wake.set()

    async def run_forever(self) -> None:
        """Check the peers every period (and at once when an adopted shard returns)."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._period_s)
            self._wake.clear()
            try:
                await self.reconcile()
            except Exception:  # a fleet that failed to start is tried again next period
                log.exception("shard %s: takeover failed", self.spec)

    async def reconcile(self) -> None:
        """Hand back what is no longer ours to collect, then adopt what is."""
        silent = self.peers.silent()
        wanted = adopted_hosts(self._targets, self.spec.index, self.spec.count, silent)
        for k in sorted(self._fostered):
            if frozenset(wanted.get(k, ())) != self._fostered[k].names:
                await self._hand_back(k)
        for k, names in sorted(wanted.items()):
            if k not in self._fostered:
                await self._adopt(k, names)

    async def stop(self) -> None:
        """Stop collecting every adopted node."""
        for k in sorted(self._fostered):
            await self._hand_back(k)

    async def _adopt(self, shard: int, names: list[str]) -> None:
        fleet = self._start_fleet([self._targets[name] for name in names])
        await fleet.start()

        def forward(snapshot: FleetSnapshot) -> None:
            if self.listener is not None and shard in self._fostered:
                self.listener(snapshot)

        self._fostered[shard] = Fostered(shard, frozenset(names), fleet, fleet.subscribe(forward))
        self.adoptions += 1
        log.warning(
            "shard %s: shard %d/%d silent for %.0f s: collecting %d of its nodes",
            self.spec,
            shard,
            self.spec.count,
            self.peers.after_s,
            len(names),
        )

    async def _hand_back(self, shard: int) -> None:
        # Out of the summaries before the sessions close: the owner collects them now.
        fostered = self._fostered.pop(shard)
        fostered.unsubscribe()
        await fostered.fleet.stop()
        self.handbacks += 1
        log.warning(
            "shard %s: handed %d nodes back to shard %d/%d",
            self.spec,
            len(fostered.names),
            shard,
            self.spec.count,
        )
