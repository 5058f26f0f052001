"""The controller's event loop: it wakes for I/O at most once every few milliseconds.

A fleet's nodes each send a line a second at their own moment, so a default loop wakes
for nearly every packet: at 1,000 nodes about a thousand turns a second, each an
``epoll_wait`` and a pass of asyncio's bookkeeping for one socket. Here the loop's
selector lets at least :data:`MIN_TURN_S` pass between two waits for I/O, so one wait
returns the packets of every node that sent meanwhile and one turn handles them all.
A turn with callbacks ready never waits (asyncio asks the selector with a zero
timeout then), and a timer still fires at its time when no I/O came first; what comes
in waits at most :data:`MIN_TURN_S`, far inside a tick (bench/bench_loop_turns.py).
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

MIN_TURN_S = 0.02
"""Seconds between two waits for I/O: 50 turns a second at most while lines stream."""

T = TypeVar("T")


class PacedSelector(selectors.DefaultSelector):
    """The platform's selector, asked no more often than once every ``min_turn_s``."""

    def __init__(
        self,
        min_turn_s: float = MIN_TURN_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__()
        self.min_turn_s = min_turn_s
        self._clock, self._sleep = clock, sleep
        self._next = 0.0  # the clock's time before which a wait first sleeps
        self.waits = 0  # waits for I/O so far (the bench and the tests read it)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout > 0:
            pause = self._next - self._clock()
            if pause > 0:
                if timeout is not None:
                    pause = min(pause, timeout)
                    timeout -= pause
                self._sleep(pause)  # what arrives meanwhile is read by the one wait below
        self.waits += 1
        events: list[tuple[selectors.SelectorKey, int]] = super().select(timeout)
        self._next = self._clock() + self.min_turn_s
        return events


def paced_loop() -> asyncio.AbstractEventLoop:
    """A new event loop over a :class:`PacedSelector`."""
    return asyncio.SelectorEventLoop(PacedSelector())


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on a :func:`paced_loop` (the long-running commands)."""
    with asyncio.Runner(loop_factory=paced_loop) as runner:
        return runner.run(main)
