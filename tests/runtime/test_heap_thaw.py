"""SSH connections that were up when the heap froze, and ended later, are freed (#11).

``gc.freeze`` keeps what it froze out of every collection. A connection is a web of
reference cycles (asyncssh's connection, channel, session and transport), so one that
was frozen and then ended stayed resident for good. Real connections here: a loopback
fleet, the runtime's own ticks, and the links cut on the nodes' side.
"""

from __future__ import annotations

import gc
import time
import weakref

from gpufleet.config import parse_config
from gpufleet.runtime import REFREEZE_MIN_S, FleetRuntime
from testkit.loopback.fleet import LoopbackFleet
from tests.runtime.waits import wait_until

NODES = ("node-001", "node-002", "node-003")


class ShiftedClock:
    """Wall-clock time plus an offset the test moves forward (the freezer's schedule)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


async def test_connections_that_ended_after_the_freeze_are_freed_by_the_next_thaw() -> None:
    config = parse_config({"fleet": {"hosts": ["node-[001-003]"], "expected_gpus": 2}})
    clock = ShiftedClock()
    async with LoopbackFleet(nodes=3, gpus=2, mode="canned") as lf:
        runtime = FleetRuntime(config, lf.targets(), data_dir=None, clock=clock)
        await runtime.start()
        try:
            heap = runtime.heap
            await wait_until(lambda: heap.frozen_at is not None, 60, "the fleet settled")
            sessions = [runtime._ssh.session(name) for name in NODES]  # the client side
            frozen = [weakref.ref(s.conn) for s in sessions if s is not None and s.conn]
            assert len(frozen) == len(NODES)

            for node in lf.nodes.values():
                node.drop_connections()  # as a dead link would
            await wait_until(
                lambda: (
                    runtime._state.connections_ended >= len(NODES)
                    and all(s is not None and s.conn is not None for s in sessions)
                    and all(s.conn is not ref() for s, ref in zip(sessions, frozen, strict=True))
                ),
                60,
                "every node reconnected",
            )
            gc.collect()
            assert all(ref() is not None for ref in frozen), "frozen: beyond any collection"

            clock.offset += REFREEZE_MIN_S  # the next scheduled collection thaws the heap
            await wait_until(lambda: heap.refreezes == 1, 30, "the heap was thawed")
            assert [ref() for ref in frozen] == [None] * len(NODES)
            assert gc.get_freeze_count() > 0  # and frozen again, the new connections with it
        finally:
            await runtime.stop()
            gc.unfreeze()  # give the test process its collector back
