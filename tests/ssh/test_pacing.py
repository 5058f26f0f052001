"""Agent lines are handled a bounded slice per loop turn, in order, and none is lost at close."""

from __future__ import annotations

import asyncio
import itertools

import asyncssh

from collectors.ssh.errors import AgentExited
from collectors.ssh.pacing import LinePacer
from collectors.ssh.stream import AGENT_WINDOW, AgentChannel
from tests.runtime.waits import wait_until


class Ticks:
    """A clock that moves one unit per reading: a slice of 5 units is 5 lines."""

    def __init__(self) -> None:
        self._count = itertools.count()

    def __call__(self) -> float:
        return float(next(self._count))


async def test_a_backlog_lets_the_loop_run_between_slices() -> None:
    pacer = LinePacer(slice_s=5, clock=Ticks())
    delivered: list[bytes] = []
    seen_by_timer: list[int] = []

    class Consumer:
        def deliver(self, line: bytes) -> None:
            delivered.append(line)

    lines = [b"%d" % i for i in range(200)]
    pacer.offer(Consumer(), lines)
    # Scheduled after the backlog arrived: without slices it would run after all 200.
    asyncio.get_running_loop().call_soon(lambda: seen_by_timer.append(len(delivered)))
    await wait_until(lambda: len(delivered) == 200, within_s=10)
    assert delivered == lines
    assert seen_by_timer and seen_by_timer[0] < 20
    assert pacer.waiting == 0


async def test_batches_of_several_channels_keep_their_order_across_slices() -> None:
    # A slice of 3 clock units ends inside the first batch: the next slice resumes there.
    pacer = LinePacer(slice_s=3, clock=Ticks())
    delivered: list[str] = []
    waiting_after_first_slice: list[int] = []

    class Consumer:
        def __init__(self, name: str) -> None:
            self.name = name

        def deliver(self, line: bytes) -> None:
            delivered.append(f"{self.name}{line.decode()}")

    a, b = Consumer("a"), Consumer("b")
    pacer.offer(a, [b"1", b"2", b"3", b"4"])
    pacer.offer(b, [])
    pacer.offer(b, [b"1", b"2"])
    pacer.offer(a, [b"5"])
    assert pacer.waiting == 7
    asyncio.get_running_loop().call_soon(lambda: waiting_after_first_slice.append(pacer.waiting))
    await wait_until(lambda: pacer.waiting == 0, within_s=10)
    assert delivered == ["a1", "a2", "a3", "a4", "b1", "b2", "a5"]
    assert waiting_after_first_slice == [4]


async def test_lines_before_the_close_are_handled_before_ended_resolves() -> None:
    order: list[str] = []
    channel = AgentChannel(lambda line: order.append(line.decode()), LinePacer())
    channel.data_received(b'{"a": 1}\n\n{"b": 2}\n{"c"', None)
    channel.data_received(b": 3}\n", None)
    channel.exit_status_received(3)
    channel.connection_lost(None)
    assert not channel.ended.done()  # two lines still queued
    exc = await asyncio.wait_for(channel.ended, 10)
    assert order == ['{"a": 1}', '{"b": 2}', '{"c": 3}']
    assert isinstance(exc, AgentExited) and "status 3" in str(exc)


async def test_reads_of_one_line_part_lines_and_blank_lines_split_the_same() -> None:
    order: list[str] = []
    channel = AgentChannel(lambda line: order.append(line.decode()), LinePacer())
    reads = [b'{"a": 1}\n', b"\n", b" \t\n", b'{"b"', b": 2}\n", b"", b'{"c": 3}\n{"d"', b": 4}\n"]
    for data in reads:
        channel.data_received(data, None)
    channel.connection_lost(None)
    await asyncio.wait_for(channel.ended, 10)
    assert order == ['{"a": 1}', '{"b": 2}', '{"c": 3}', '{"d": 4}']


async def test_a_line_counts_as_blank_exactly_when_strip_leaves_nothing() -> None:
    # Single-line reads and multi-line reads take different paths through the channel.
    order: list[bytes] = []
    channel = AgentChannel(order.append, LinePacer())
    kinds = [b"", b" ", b"\t\r\x0b\x0c", b"\x85", b"\x1c", b"\xa0 ", b" x "]
    for kind in kinds:
        channel.data_received(kind + b"\n", None)
    channel.data_received(b"\n".join(kinds) + b"\n", None)
    channel.connection_lost(None)
    await asyncio.wait_for(channel.ended, 10)
    kept = [kind for kind in kinds if kind.strip()]
    assert kept == [b"\x85", b"\x1c", b"\xa0 ", b" x "]
    assert order == kept + kept


async def test_lines_after_a_protocol_failure_are_dropped() -> None:
    order: list[str] = []
    pacer = LinePacer()

    def on_line(line: bytes) -> None:
        order.append(line.decode())
        channel.fail(AgentExited("bad line"))

    channel = AgentChannel(on_line, pacer)
    channel.data_received(b"first\nsecond\nthird\n", None)
    exc = await asyncio.wait_for(channel.ended, 10)
    await wait_until(lambda: pacer.waiting == 0, within_s=10)
    assert order == ["first"]
    assert str(exc) == "bad line"


async def test_lines_queued_when_the_reader_is_cancelled_are_dropped() -> None:
    # Cancelling the task that awaits ``ended`` (a fleet stopping) cancels the future
    # itself: lines still queued in the pacer must not reach the sink after that.
    got: list[bytes] = []
    pacer = LinePacer()
    channel = AgentChannel(got.append, pacer)
    channel.data_received(b"first\nsecond\n", None)
    channel.ended.cancel()
    await wait_until(lambda: pacer.waiting == 0, within_s=10)
    assert got == []


BURST = 600


class _Burst(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False  # loopback test server: no authentication


async def _write_burst(process: asyncssh.SSHServerProcess[bytes]) -> None:
    # ~60 KB at once, well past the agent channel's 32 KiB window: the client pauses
    # and resumes reading several times before the last line arrives.
    process.stdout.write(
        b"".join(b'{"n": %d, "pad": "%s"}\n' % (i, b"x" * 80) for i in range(BURST))
    )
    await process.stdout.drain()
    process.exit(0)


async def test_a_burst_past_the_window_arrives_whole_and_in_order() -> None:
    key = asyncssh.generate_private_key("ssh-ed25519")
    server = await asyncssh.listen(
        "127.0.0.1", 0, server_host_keys=[key], server_factory=_Burst,
        process_factory=_write_burst, encoding=None,
    )  # fmt: skip
    got: list[int] = []
    pacer = LinePacer()
    try:
        port = server.sockets[0].getsockname()[1]
        async with asyncssh.connect("127.0.0.1", port, known_hosts=None, username="t") as conn:
            channel = AgentChannel(lambda line: got.append(int(line[6:].split(b",")[0])), pacer)
            await conn.create_session(lambda: channel, "agent", encoding=None, window=AGENT_WINDOW)
            exc = await asyncio.wait_for(channel.ended, 30)
    finally:
        server.close()
    assert got == list(range(BURST))
    assert isinstance(exc, AgentExited) and "status 0" in str(exc)
