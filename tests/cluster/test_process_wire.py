"""A node's processes over NATS, pure: the reply's bounds, the viewer's checks and
sanitiser, and the shard's side (one read per node, shared, fresh, capped, refused)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import msgspec
import pytest

from cluster.process_answers import FRESH_S, MAX_READS_AT_ONCE, ProcessAnswers
from cluster.process_wire import (
    MAX_REPLY_BYTES,
    ProcessAnswer,
    WireProcess,
    decode_answer,
    encode_failure,
    encode_listing,
)
from cluster.publisher import ShardPublisher
from cluster.shards import ShardSpec, owner
from cluster.takeover import Takeover, adopted_hosts
from collectors.process_list import GpuProcess, ProcessListing
from collectors.ssh.target import NodeTarget
from fleet.facade import ProcessReader, RequestFailed, UnknownNode
from fleet.model import FleetSnapshot
from tests.cluster.test_board import node
from tests.cluster.test_takeover import Clock, beat

LISTING = ProcessListing(
    "node-007",
    1_700_000_000.25,
    (
        GpuProcess(0, 4242, "alice", 3 << 30, "python train.py --lr 3e-4"),
        GpuProcess(3, 4243, None, None, None),  # ended before /proc was read
        GpuProcess(7, 99, "1001", 0, "./a.out"),  # a uid without a user name
    ),
    "GPU 5: NVML_ERROR_GPU_IS_LOST",
)


def test_what_the_shard_lists_arrives_unchanged() -> None:
    assert decode_answer("node-007", encode_listing(LISTING)) == LISTING


def test_a_hostile_shards_strings_are_made_visible_before_the_screen() -> None:
    evil = "train.py \x1b]52;c;aGFja2Vk\x07\x1b[2J\u202eevil"
    raw = msgspec.msgpack.encode(
        ProcessAnswer(
            "node-007",
            1.0,
            [WireProcess(0, 7, "r\x1b[31moot", None, evil)],
            error="lost\r\nforged log line",
        )
    )
    listing = decode_answer("node-007", raw)
    (process,) = listing.processes
    for text in (process.command, process.user, listing.error):
        assert text is not None
        assert not any(c in text for c in "\x1b\x07\r\n\u202e"), text
    assert process.command is not None and "\\x1b]52" in process.command  # visible, not gone


def test_a_huge_listing_is_cut_to_the_bound_and_says_so() -> None:
    big = tuple(GpuProcess(i % 8, i + 1, "bob", 1 << 30, "x" * 4096) for i in range(1024))
    data = encode_listing(ProcessListing("node-007", 5.0, big))
    assert len(data) <= MAX_REPLY_BYTES
    listing = decode_answer("node-007", data)
    sent = len(listing.processes)
    assert 0 < sent < 1024 and listing.processes == big[:sent]
    assert listing.error == f"{1024 - sent} more processes not sent (the reply is bounded)"


def test_replies_out_of_bounds_or_about_another_node_are_refused() -> None:
    with pytest.raises(RequestFailed, match="over the bound"):
        decode_answer("node-007", b"\x00" * (MAX_REPLY_BYTES + 1))
    with pytest.raises(RequestFailed, match="malformed"):
        decode_answer("node-007", b"\x93garbage")
    too_long = ProcessAnswer("node-007", 1.0, [WireProcess(0, 7, None, None, "y" * 4097)])
    with pytest.raises(RequestFailed, match="malformed"):
        decode_answer("node-007", msgspec.msgpack.encode(too_long))
    with pytest.raises(RequestFailed, match="answered for node-008"):
        decode_answer("node-007", encode_listing(ProcessListing("node-008", 1.0)))
    with pytest.raises(UnknownNode, match="not collected by shard 2/3"):
        decode_answer(
            "node-007",
            encode_failure("node-007", "node-007 is not collected by shard 2/3", 1.0, refused=True),
        )


class Node:
    """A fleet whose processes reads wait until the test lets them finish."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = set(names)
        self.reads: list[str] = []
        self.release = asyncio.Event()
        self._read = asyncio.Condition()

    async def reading(self, count: int) -> None:
        """Until ``count`` reads have started."""
        async with self._read:
            await self._read.wait_for(lambda: len(self.reads) >= count)

    async def processes(self, node: str) -> ProcessListing:
        if node not in self.names:
            raise UnknownNode(f"{node} is not part of the fleet")
        async with self._read:
            self.reads.append(node)
            self._read.notify_all()
        await self.release.wait()
        return ProcessListing(node, 10.0, LISTING.processes)


def holder_of(fleet: Node) -> Callable[[str], ProcessReader | None]:
    return lambda name: fleet if name in fleet.names else None


async def test_viewers_asking_at_once_share_one_read_and_a_fresh_answer() -> None:
    fleet, clock = Node(["a"]), Clock()
    answers = ProcessAnswers(holder_of(fleet), "1/2", clock=clock)
    asking = [asyncio.create_task(answers.answer("a"))]
    await asyncio.wait_for(fleet.reading(1), 10)
    asking += [asyncio.create_task(answers.answer("a")) for _ in range(4)]
    fleet.release.set()
    replies = await asyncio.gather(*asking)
    assert fleet.reads == ["a"] and len(set(replies)) == 1
    assert decode_answer("a", replies[0]).processes == LISTING.processes
    clock.t += FRESH_S - 0.1
    assert await answers.answer("a") == replies[0] and fleet.reads == ["a"]
    clock.t += 0.2
    await answers.answer("a")
    assert fleet.reads == ["a", "a"]


async def test_a_node_the_shard_does_not_collect_is_refused_without_a_read() -> None:
    fleet = Node(["a"])
    answers = ProcessAnswers(holder_of(fleet), "1/2", clock=Clock())
    with pytest.raises(UnknownNode, match="node-9 is not collected by shard 1/2"):
        decode_answer("node-9", await answers.answer("node-9"))
    assert fleet.reads == []


async def test_more_nodes_than_the_cap_at_once_are_answered_busy() -> None:
    names = [f"n{i}" for i in range(MAX_READS_AT_ONCE + 1)]
    fleet = Node(names)
    answers = ProcessAnswers(holder_of(fleet), "1/2", clock=Clock())
    reading = [asyncio.create_task(answers.answer(n)) for n in names[:-1]]
    await asyncio.wait_for(fleet.reading(MAX_READS_AT_ONCE), 10)
    busy = decode_answer(names[-1], await answers.answer(names[-1]))
    assert busy.processes == () and busy.error is not None and "busy" in busy.error
    assert answers.busy == 1 and len(fleet.reads) == MAX_READS_AT_ONCE
    fleet.release.set()
    await asyncio.gather(*reading)


class Fleet:
    """The shard's own fleet as the publisher sees it: a latest snapshot and processes."""

    def __init__(self, names: Sequence[str]) -> None:
        self.snapshot = FleetSnapshot(0.0, tuple(node(n) for n in names))
        self.reader = Node(names)

    def latest(self) -> FleetSnapshot | None:
        return self.snapshot

    async def processes(self, node: str) -> ProcessListing:
        return await self.reader.processes(node)


class Foster(Fleet):
    def __init__(self, targets: Sequence[NodeTarget]) -> None:
        super().__init__([t.name for t in targets])

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def subscribe(self, listener: Callable[[FleetSnapshot], None]) -> Callable[[], None]:
        return lambda: None


async def test_the_shard_answers_for_its_own_nodes_and_the_adopted_ones() -> None:
    hosts = [f"gpu-{i:03d}" for i in range(30)]
    own = [h for h in hosts if owner(h, 3) == 1]
    clock = Clock()
    takeover = Takeover(
        ShardSpec(1, 3),
        [NodeTarget(name=h, host="127.0.0.1") for h in hosts],
        10.0,
        1.0,
        Foster,
        clock=clock,
    )
    for _ in range(11):  # shard 2 silent past takeover_after_s
        clock.t += 1.0
        for k in (1, 3):
            takeover.heard(beat(k))
        await takeover.reconcile()
    adopted = adopted_hosts(hosts, 1, 3, {2})[2]
    foreign = next(h for h in hosts if h not in own and h not in adopted)
    shard = Fleet(own)
    publisher = ShardPublisher(shard, ShardSpec(1, 3), "nats://127.0.0.1:1", 1.0, takeover=takeover)  # type: ignore[arg-type]
    assert publisher._process_reader(own[0]) is shard
    foster = takeover.fleet_of(adopted[0])
    assert foster is not None and publisher._process_reader(adopted[0]) is foster
    assert publisher._process_reader(foreign) is None
    await takeover.stop()
