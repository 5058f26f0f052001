"""One clock for an in-process agent and its simulated node: waits return at once.

Shared by the agent's tests and the fleet's end-to-end test.
"""

from __future__ import annotations

import threading

from collectors import sim

WALL_START = 1_800_000_000.0


class SimClock:
    """The agent's clock and the sim's clock in one; waits return at once."""

    def __init__(self, early: float = 0.0) -> None:
        self.t = 0.0
        self.early = early  # each wait wakes this much before its deadline
        self.stop_event = threading.Event()
        self.reason = ""
        self.node: sim.SimNode | None = None

    def time(self) -> float:
        return WALL_START + self.t

    def monotonic(self) -> float:
        return self.t

    def elapsed(self) -> float:
        return self.t

    def wait_until(self, deadline: float) -> bool:
        self.t = max(self.t, deadline - self.early)
        if self.node is not None:
            self.node.tick()
        return self.stop_event.is_set()

    def stop(self, reason: str) -> None:
        self.reason = self.reason or reason
        self.stop_event.set()
