"""The controller's event loop waits for I/O at most once every few ms (gpufleet.event_loop)."""

from __future__ import annotations

import asyncio
import socket

from collectors.ssh.pacing import LinePacer
from gpufleet.event_loop import PacedSelector, paced_loop
from gpufleet.event_loop import run as run_paced


class FakeTime:
    """A clock that moves only when the selector sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def _selector(fake: FakeTime) -> PacedSelector:
    return PacedSelector(0.02, clock=fake.clock, sleep=fake.sleep)


def test_a_wait_right_after_another_first_sleeps_out_the_turn() -> None:
    fake = FakeTime()
    selector = _selector(fake)
    selector.select(0)  # nothing registered: returns at once
    fake.now += 0.005
    selector.select(1.0)
    assert fake.slept == [0.015]
    assert selector.waits == 2


def test_ready_callbacks_never_wait() -> None:
    fake = FakeTime()
    selector = _selector(fake)
    selector.select(0)
    selector.select(0)  # asyncio asks with 0 when callbacks are ready
    assert fake.slept == []


def test_a_timer_due_sooner_than_the_turn_is_not_delayed() -> None:
    fake = FakeTime()
    selector = _selector(fake)
    selector.select(0)
    selector.select(0.004)  # the next timer is due in 4 ms: sleep no longer than that
    assert fake.slept == [0.004]


def test_a_late_wait_does_not_sleep() -> None:
    fake = FakeTime()
    selector = _selector(fake)
    selector.select(0)
    fake.now += 0.5
    selector.select(0.001)  # the turn is long over
    assert fake.slept == []


def test_one_wait_reads_every_socket_that_became_ready() -> None:
    async def main() -> tuple[list[bytes], list[int]]:
        loop = asyncio.get_running_loop()
        pairs = [socket.socketpair() for _ in range(5)]
        got: list[bytes] = []
        turns: list[int] = []  # the wait each read came from
        done = asyncio.Event()

        def reader(sock: socket.socket) -> None:
            got.append(sock.recv(100))
            turns.append(selector.waits)
            loop.remove_reader(sock)
            if len(got) == len(pairs):
                done.set()

        for receiving, _ in pairs:
            receiving.setblocking(False)
            loop.add_reader(receiving, reader, receiving)
        selector = loop._selector  # type: ignore[attr-defined]
        for _, sending in pairs:
            sending.send(b"line\n")  # all ready before the loop waits again
        await done.wait()
        for a, b in pairs:
            a.close()
            b.close()
        return got, turns

    got, turns = run_paced(main())
    assert got == [b"line\n"] * 5
    assert len(set(turns)) == 1  # one wait returned them all


def test_the_paced_loop_runs_timers_in_order() -> None:
    loop = paced_loop()
    fired: list[int] = []
    try:
        for i, delay in enumerate((0.03, 0.0, 0.01)):
            loop.call_later(delay, fired.append, i)
        loop.call_later(0.05, loop.stop)
        loop.run_forever()
    finally:
        loop.close()
    assert fired == [1, 2, 0]


class Lines:
    def __init__(self) -> None:
        self.got: list[bytes] = []

    def deliver(self, line: bytes) -> None:
        self.got.append(line)


async def test_queued_lines_are_taken_before_the_tick_not_after() -> None:
    pacer = LinePacer()
    channel = Lines()
    pacer.offer(channel, [b"a", b"b"])  # read in this turn; the drain callback comes later
    pacer.drain_now()  # what the tick does first
    assert channel.got == [b"a", b"b"]
    assert pacer.waiting == 0
    await asyncio.sleep(0)  # the scheduled drain finds nothing left
    assert channel.got == [b"a", b"b"]
