"""Bounded ingest per event-loop turn: agent lines are queued, then handled a slice at a time.

Without it a backlog starves everything else on the loop: once the controller falls
behind, one socket read returns up to 256 KB (about 150 samples) and asyncssh hands
all of it to the channel inside one callback, so decoding and ingesting a fleet's
backlog ran for tens of seconds with no tick in between. Here a channel only splits
bytes into lines and queues them; one fleet-wide drain callback decodes and delivers
lines for at most :data:`SLICE_S`, then lets the loop run its timers and I/O before
the next slice. A channel with many lines waiting stops reading (SSH flow control
pushes back on the agent) until its queue is short again.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

SLICE_S = 0.01
"""Seconds of line handling per loop turn (~20 samples): a tick waits at most this long."""


class LineConsumer(Protocol):
    """A channel whose queued lines the pacer hands back one by one."""

    def deliver(self, line: bytes) -> None:
        """Handle one queued line."""


class LinePacer:
    """One FIFO of channels' line batches for a fleet, drained in slices of :data:`SLICE_S`.

    A batch is the list of lines one read of a channel produced: queued as one entry
    (no object per line), handed back line by line, the clock read after each.

    Args:
        slice_s: the most seconds one drain callback spends before yielding.
        clock: a monotonic clock for the slice.
    """

    def __init__(
        self, slice_s: float = SLICE_S, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self._slice_s = slice_s
        self._clock = clock
        self._queue: deque[tuple[LineConsumer, list[bytes]]] = deque()
        self._head_done = 0  # lines of the first batch already handed back
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scheduled = False

    @property
    def waiting(self) -> int:
        """Lines queued and not yet handled."""
        return sum(len(lines) for _, lines in self._queue) - self._head_done

    def offer(self, consumer: LineConsumer, lines: list[bytes]) -> None:
        """Queue ``lines`` of ``consumer``, to be handed back in order on a later turn.

        The pacer keeps the list itself: the caller must not change it afterwards.
        """
        if not lines:
            return
        self._queue.append((consumer, lines))
        if not self._scheduled:
            if self._loop is None:
                self._loop = asyncio.get_running_loop()
            self._loop.call_soon(self._drain)
            self._scheduled = True

    def drain_now(self) -> None:
        """Hand back queued lines now, for at most one slice (the tick calls it first).

        Lines read in the loop turn that runs a tick would otherwise be handled by a
        drain callback after the tick, and wait for the next one.
        """
        if self._queue:
            self._hand_back()

    def _drain(self) -> None:
        self._scheduled = False
        self._hand_back()

    def _hand_back(self) -> None:
        queue, clock = self._queue, self._clock
        deadline = clock() + self._slice_s
        done = self._head_done
        out_of_time = False
        while queue and not out_of_time:
            consumer, lines = queue[0]
            deliver, count = consumer.deliver, len(lines)
            while done < count:
                line = lines[done]
                done += 1
                deliver(line)
                if clock() >= deadline:
                    out_of_time = True
                    break
            if done >= count:
                queue.popleft()
                done = 0
        self._head_done = done
        if queue and not self._scheduled:
            assert self._loop is not None
            self._loop.call_soon(self._drain)
            self._scheduled = True
