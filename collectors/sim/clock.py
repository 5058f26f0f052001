"""A clock that moves only when told to, for tests and benchmarks of simulated nodes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class ManualClock:
    """Seconds since a simulated node's start, set by hand.

    Pass it as ``install(..., clock=clock)``, move it with :meth:`advance` or
    :meth:`set`, then call ``SimNode.tick()`` so sysfs and event waiters catch up.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def set(self, seconds: float) -> None:
        """Jump to ``seconds`` since the start (time may not run backwards)."""
        with self._lock:
            if seconds < self._now:
                raise ValueError(f"clock cannot run backwards: {seconds} < {self._now}")
            self._now = float(seconds)

    def advance(self, seconds: float) -> None:
        """Move forward by ``seconds``."""
        if seconds < 0:
            raise ValueError(f"cannot advance by a negative time: {seconds}")
        with self._lock:
            self._now += seconds


def epoch_clock(epoch: float) -> Callable[[], float]:
    """Seconds since ``epoch`` (a Unix time): a clock every process of a fleet shares.

    An agent restarted after a crash, or a node started late, then sees the scenario
    at the same instant as the rest of the fleet instead of replaying it from 0.
    """

    def elapsed() -> float:
        return max(0.0, time.time() - epoch)

    return elapsed
