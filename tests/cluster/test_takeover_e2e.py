"""Takeover with real ``serve --shard`` processes on a real nats-server: a SIGKILLed
shard's nodes are collected by the live shard rendezvous hashing picks and handed back
when it is restarted; a SIGSTOPped shard's the same, handed back on SIGCONT. What each
shard published (its summaries' node sets and its heartbeats) shows that no node is
collected by two shards after the handover."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from cluster.attach import AttachedFleet
from cluster.natsd import LocalNats
from cluster.shards import owner_among
from cluster.takeover import HEARTBEAT_WILDCARD, Heartbeat, decode_heartbeat
from cluster.wire import SUMMARY_WILDCARD, decode_summary
from fleet.model import FleetSnapshot
from gpufleet.demo_shards import shard_processes
from gpufleet.shard import write_targets_file
from testkit.loopback.fleet import LoopbackFleet
from tests.cluster.conftest import INTERVAL
from tests.cluster.test_dead_shard import shard_config, watched
from tests.cluster.test_same_fleet_e2e import until

pytestmark = pytest.mark.e2e

TAKEOVER_AFTER_S = 4.0  # above the viewer's 5 x 0.5 s of silence, as the key's doc asks
# With 3 shards: node-004 is shard 1's, node-001..003 shard 2's, node-005 shard 3's.
SHARD_1, SHARD_2 = ("node-004",), ("node-001", "node-002", "node-003")
# The adopter's summaries that may still carry a node after its owner is heard again:
# the one encoded before the heartbeat arrived and the one in flight beside it.
HANDOVER_SUMMARIES = 2


@dataclass
class Published:
    """Every shard's summaries (arrival, node names) and heartbeats, as NATS carried them."""

    summaries: dict[int, list[tuple[float, frozenset[str]]]] = field(default_factory=dict)
    beats: dict[int, list[tuple[float, Heartbeat]]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_summary(self, msg: Msg) -> None:
        summary = decode_summary(msg.data)
        names = frozenset(n.name for n in summary.nodes)
        self.summaries.setdefault(summary.shard, []).append((time.monotonic(), names))

    async def on_beat(self, msg: Msg) -> None:
        beat = decode_heartbeat(msg.data)
        self.beats.setdefault(beat.shard, []).append((time.monotonic(), beat))
        self.changed.set()

    def latest_beat(self, shard: int) -> Heartbeat | None:
        beats = self.beats.get(shard)
        return beats[-1][1] if beats else None

    def first_beat_since(self, shard: int, t: float) -> float:
        return next(at for at, _ in self.beats[shard] if at >= t)

    def summaries_since(self, shard: int, t: float) -> int:
        return sum(1 for at, _ in self.summaries.get(shard, []) if at > t)

    def carried_after(self, shard: int, node: str, t: float) -> int:
        """How many of ``shard``'s summaries arriving after ``t`` carried ``node``."""
        return sum(1 for at, names in self.summaries.get(shard, []) if at > t and node in names)

    async def wait(self, condition: Callable[[], bool], within_s: float) -> float:
        """Wait until ``condition`` holds on the heartbeats; the seconds it took."""
        started = time.monotonic()
        while not condition():
            self.changed.clear()
            left = within_s - (time.monotonic() - started)
            if left <= 0:
                beats = {k: self.latest_beat(k) for k in sorted(self.beats)}
                raise AssertionError(f"not within {within_s} s: {beats}")
            await asyncio.wait_for(self.changed.wait(), left)
        return time.monotonic() - started


def adopting(seen: Published, shard: int) -> tuple[int, ...] | None:
    beat = seen.latest_beat(shard)
    return None if beat is None else beat.adopting


def adopters(nodes: tuple[str, ...], silent: int) -> dict[str, int]:
    live = [k for k in (1, 2, 3) if k != silent]
    return {name: owner_among(name, live) for name in nodes}


def from_adopters(viewer: AttachedFleet, placed: dict[str, int]) -> Callable[[FleetSnapshot], bool]:
    """The view is the whole fleet again, the silent shard's nodes from their adopters."""

    def check(snapshot: FleetSnapshot) -> bool:
        return watched(snapshot) and all(viewer.board.owner_of(n) == k for n, k in placed.items())

    return check


async def start_shard(
    k: int, config: Path, targets: Path, data: Path
) -> asyncio.subprocess.Process:
    """Shard ``k`` of 3 again, as ``shard_processes`` starts it."""
    argv = ["serve", "-c", str(config), "--data-dir", str(data), "--shard", f"{k}/3"]
    argv += ["--targets-file", str(targets), "--metrics-addr", "127.0.0.1:0"]
    with (data / f"shard-{k}.log").open("ab") as log:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gpufleet", *argv, stdin=asyncio.subprocess.DEVNULL,
            stdout=log, stderr=log,
        )  # fmt: skip


async def test_a_killed_and_a_stopped_shards_nodes_are_adopted_and_handed_back(
    loopback: LoopbackFleet, nats_server: LocalNats, tmp_path: Path
) -> None:
    config = tmp_path / "shard.toml"
    config.write_text(shard_config(nats_server.url) + f"takeover_after_s = {TAKEOVER_AFTER_S}\n")
    targets = tmp_path / "targets.json"
    write_targets_file(targets, loopback.targets(interval=INTERVAL, slow_interval=1.0))
    data = tmp_path / "data"
    data.mkdir()
    seen = Published()
    tap = Client()
    await tap.connect(nats_server.url)
    await tap.subscribe(SUMMARY_WILDCARD, cb=seen.on_summary)
    await tap.subscribe(HEARTBEAT_WILDCARD, cb=seen.on_beat)
    viewer = AttachedFleet(nats_server.url, tick_s=INTERVAL)
    restarted: asyncio.subprocess.Process | None = None
    figures: dict[str, float] = {}
    async with shard_processes([config] * 3, targets, data) as shards:
        await viewer.start()
        try:
            await until(viewer, watched, 120)
            # Shards start one after another: a late one's nodes may have been adopted.
            await seen.wait(lambda: all(adopting(seen, k) == () for k in (1, 2, 3)), 60)
            # SIGKILL: shard 1's node-004 goes to the adopter every live shard computes.
            placed = adopters(SHARD_1, 1)
            (adopter,) = set(placed.values())
            own = seen.latest_beat(adopter).sessions  # type: ignore[union-attr]
            killed = time.monotonic()
            shards[0].send_signal(signal.SIGKILL)
            await seen.wait(lambda: seen.latest_beat(adopter).adopting == (1,), 30)  # type: ignore[union-attr]
            figures["kill_to_adopted_s"] = time.monotonic() - killed
            assert seen.latest_beat(adopter).sessions == own + 1  # type: ignore[union-attr]
            await until(viewer, from_adopters(viewer, placed), 60)
            figures["kill_to_streaming_from_adopter_s"] = time.monotonic() - killed
            # Silence counts from the last heartbeat heard, up to a tick before the kill.
            assert figures["kill_to_adopted_s"] >= TAKEOVER_AFTER_S - INTERVAL

            # Restarted, it is heard and the adopter hands node-004 back at once.
            back = time.monotonic()
            restarted = await start_shard(1, config, targets, data)
            await seen.wait(lambda: seen.latest_beat(adopter).adopting == (), 60)  # type: ignore[union-attr]
            figures["restart_to_handed_back_s"] = time.monotonic() - back
            assert seen.latest_beat(adopter).sessions == own  # type: ignore[union-attr]
            await until(viewer, from_adopters(viewer, {"node-004": 1}), 60)
            heard = seen.first_beat_since(1, back)
            assert seen.carried_after(adopter, "node-004", heard) <= HANDOVER_SUMMARIES

            # SIGSTOP: shard 2's three nodes spread over the live shards, then come back.
            placed = adopters(SHARD_2, 2)
            stopped = time.monotonic()
            os.kill(shards[1].pid, signal.SIGSTOP)
            try:
                await until(viewer, from_adopters(viewer, placed), 60)
                figures["stop_to_streaming_from_adopters_s"] = time.monotonic() - stopped
                for k in set(placed.values()):
                    assert seen.latest_beat(k).adopting == (2,)  # type: ignore[union-attr]
            finally:
                thawed = time.monotonic()
                os.kill(shards[1].pid, signal.SIGCONT)
            await seen.wait(
                lambda: all(seen.latest_beat(k).adopting == () for k in (1, 3)),  # type: ignore[union-attr]
                60,
            )
            figures["cont_to_handed_back_s"] = time.monotonic() - thawed
            await until(viewer, from_adopters(viewer, dict.fromkeys(SHARD_2, 2)), 60)
            heard = seen.first_beat_since(2, thawed)
            for name, k in placed.items():
                assert seen.carried_after(k, name, heard) <= HANDOVER_SUMMARIES
            # And from then on each node is in exactly one shard's summaries.
            settled = time.monotonic()
            await seen.wait(
                lambda: all(seen.summaries_since(k, settled) >= 3 for k in (1, 2, 3)), 30
            )
            late = {
                k: set().union(*(names for at, names in rows if at > settled))
                for k, rows in seen.summaries.items()
            }
            assert late[2] >= set(SHARD_2) and not late[1] & set(SHARD_2)
            assert not late[3] & set(SHARD_2)
        finally:
            print("takeover figures:", json.dumps({k: round(v, 2) for k, v in figures.items()}))
            await viewer.stop()
            await tap.close()
            if restarted is not None:
                restarted.terminate()
                await restarted.wait()
