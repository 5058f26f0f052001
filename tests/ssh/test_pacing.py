"""Agent lines are handled a bounded slice per loop turn, in order, and none is lost at close."""

from __future__ import annotations

import asyncio
import itertools

from collectors.ssh.errors import AgentExited
from collectors.ssh.pacing import LinePacer
from collectors.ssh.stream import AgentChannel
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
