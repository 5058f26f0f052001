"""The tick first takes the lines already read (collectors.ssh.pacing.LinePacer.drain_now).

Lines read in the loop turn that runs a tick were handled by the pacer's drain callback
after the tick, so their samples waited a whole tick to be shown.
"""

from __future__ import annotations

import asyncio

from collectors.ssh.pacing import LinePacer


async def _next_turn() -> None:
    """Return once the callbacks already scheduled (the pacer's drain) have run."""
    turned = asyncio.Event()
    asyncio.get_running_loop().call_soon(turned.set)  # after every callback queued before it
    await asyncio.wait_for(turned.wait(), 5.0)


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
    await _next_turn()  # the scheduled drain finds nothing left
    assert channel.got == [b"a", b"b"]


async def test_a_long_queue_is_taken_one_slice_at_a_time() -> None:
    clock = iter(float(i) for i in range(100))
    pacer = LinePacer(slice_s=2.5, clock=lambda: next(clock))
    channel = Lines()
    pacer.offer(channel, [b"a", b"b", b"c", b"d", b"e"])
    pacer.drain_now()  # the slice's deadline passes after three lines
    assert channel.got == [b"a", b"b", b"c"]
    assert pacer.waiting == 2
    await _next_turn()  # the rest in the next turn, as the drain callback does
    assert channel.got == [b"a", b"b", b"c", b"d", b"e"]
