"""A viewer and a shard stop even when a task of theirs drops a cancellation.

On Python 3.11 ``asyncio.wait_for`` (under every NATS request) returns the result of a
future that completed in the same loop turn as the cancellation, and the cancellation
is gone: a viewer whose tick was inside a detail request went on ticking, and its
``stop()`` waited for ever (a CI run hung there for the whole test timeout).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine

from cluster.attach import AttachedFleet
from cluster.natsd import LocalNats
from cluster.publisher import ShardPublisher
from cluster.shards import ShardSpec
from testkit.static_fleet import StaticFleet
from tests.cluster.test_bus import fleet_at


class DropsOneCancel:
    """Stands in for a NATS request whose reply came as the cancellation did."""

    def __init__(self) -> None:
        self.dropped = 0
        self.waiting = asyncio.Event()

    async def __call__(self) -> None:
        if self.dropped:
            return
        self.waiting.set()
        try:
            await asyncio.Event().wait()  # a reply that never comes
        except asyncio.CancelledError:
            self.dropped += 1  # what wait_for does then: the result, not the cancel


async def stops(stop: Coroutine[object, object, None]) -> bool:
    """Whether ``stop`` ends by itself: a deadline that cancelled it would also cancel
    what it waits on, and hide the hang."""
    stopping = asyncio.create_task(stop)
    done, _ = await asyncio.wait({stopping}, timeout=20)
    if not done:
        stopping.cancel()
        await asyncio.wait({stopping})
    return bool(done)


async def test_a_viewer_whose_tick_drops_a_cancellation_still_stops(
    nats_server: LocalNats,
) -> None:
    viewer = AttachedFleet(nats_server.url, tick_s=0.05)
    fetch = DropsOneCancel()
    viewer._fetch_focused = fetch  # type: ignore[method-assign]
    await viewer.start()
    ticker = viewer._ticker
    assert ticker is not None
    await asyncio.wait_for(fetch.waiting.wait(), 10)  # a tick is inside its request
    assert await stops(viewer.stop())
    assert fetch.dropped == 1 and ticker.done()


async def test_a_shard_whose_pump_drops_a_cancellation_still_stops(
    nats_server: LocalNats,
) -> None:
    shard = StaticFleet([fleet_at(0.0, lost=False)])
    publisher = ShardPublisher(shard, ShardSpec(1, 1), nats_server.url, interval=0.05)
    await publisher.start()
    dropped = DropsOneCancel()

    async def pumping() -> None:  # a loop like the shard's pump, inside a request
        while True:
            await dropped()
            await asyncio.Event().wait()  # the next request, which never replies either

    stubborn = asyncio.create_task(pumping())
    publisher._probes.add(stubborn)
    await asyncio.wait_for(dropped.waiting.wait(), 10)
    assert await stops(publisher.stop())
    assert dropped.dropped == 1 and stubborn.done()
