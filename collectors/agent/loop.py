"""The sampling loop: a sample every interval on a fixed grid, slow fields on theirs.

Time comes from a clock object so tests can drive the loop without sleeping; the
real clock sleeps on an Event that a signal handler sets, so SIGTERM ends a wait at
once.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Optional

try:  # typing.Protocol is 3.8+, but keep the agent importable by any python3 for --help
    from typing import Protocol
except ImportError:  # pragma: no cover
    Protocol = object  # type: ignore[assignment]

from collectors.agent import wire
from collectors.agent.events import EventWatcher
from collectors.agent.jobs import JobReporter
from collectors.agent.sampler import NodeSampler


class Clock(Protocol):
    """What the loop needs of time: the real clock, or one a test moves."""

    stop_event: threading.Event
    reason: str

    def time(self) -> float:
        """Seconds since the epoch (timestamps)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (the schedule)."""

    def wait_until(self, deadline: float) -> bool:
        """Wait until ``deadline`` (monotonic); True when stopped."""

    def stop(self, reason: str) -> None:
        """End the loop at its next wait."""


class RealClock:
    """Wall time for timestamps, monotonic time for the schedule, Event-based waits."""

    def __init__(self) -> None:
        self.stop_event = threading.Event()
        self.reason = ""

    def time(self) -> float:
        """Seconds since the epoch (sample timestamps)."""
        return time.time()

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (the schedule)."""
        return time.monotonic()

    def wait_until(self, deadline: float) -> bool:
        """Sleep until ``deadline`` (monotonic); True when stopped meanwhile."""
        remaining = deadline - time.monotonic()
        if remaining > 0:
            return self.stop_event.wait(remaining)
        return self.stop_event.is_set()

    def stop(self, reason: str) -> None:
        """End the loop at its next wait (safe from a signal handler)."""
        if not self.reason:
            self.reason = reason
        self.stop_event.set()


class Agent:
    """Runs the sampler on schedule and writes its messages."""

    def __init__(
        self,
        writer: wire.Writer,
        sampler: NodeSampler,
        clock: Clock,
        interval: float,
        slow_interval: float,
        events: Optional[EventWatcher] = None,
        max_samples: Optional[int] = None,
        jobs: Optional[JobReporter] = None,
    ) -> None:
        self.writer = writer
        self.sampler = sampler
        self.clock = clock
        self.interval = interval
        self.slow_interval = slow_interval
        # Set only when events are drained inline (no watcher thread): tests, no threads.
        self.inline_events = events
        self.max_samples = max_samples
        self.jobs = jobs
        self.seq = 0

    def run(self) -> str:
        """Sample until stopped; returns the reason (raises StreamClosed if stdout goes)."""
        clock = self.clock
        start = clock.monotonic()
        slot = 0
        next_slow = start
        while True:
            now = clock.monotonic()
            # Half an interval of slack: a wait that wakes a hair early still counts.
            slow = now >= next_slow - self.interval / 2
            if slow:
                # Past the slack too, or an early wake would make the next tick slow again.
                next_slow = _next_on_grid(start, self.slow_interval, now + self.interval / 2)
            self._tick(slow)
            if self.max_samples is not None and self.seq >= self.max_samples:
                return "max samples"
            slot += 1
            deadline = start + slot * self.interval
            now = clock.monotonic()
            if deadline <= now:
                # Fell behind (a stalled NVML call): skip the missed slots, keep the grid.
                deadline = _next_on_grid(start, self.interval, now)
                slot = round((deadline - start) / self.interval)
            if clock.wait_until(deadline):
                return clock.reason or "stopped"

    def _tick(self, slow: bool) -> None:
        t = self.clock.time()
        message = self.sampler.sample(t, self.seq, slow)
        for gpu in self.sampler.take_newly_lost():
            self.writer.send(
                wire.event(t, "gpu_lost", gpu.index, gpu.uuid, detail="NVMLError_GpuIsLost")
            )
        self.writer.send(message)
        if slow and self.jobs is not None:
            try:
                found = self.jobs.poll(t)
            except Exception as exc:  # attribution is best effort: never stop sampling
                found = wire.error(t, "JobsFailed", type(exc).__name__)
            if found is not None:
                self.writer.send(found)
        self.seq += 1
        if self.inline_events is not None:
            self.inline_events.drain()


def _next_on_grid(start: float, step: float, now: float) -> float:
    """The first point ``start + k * step`` strictly after ``now``."""
    return start + (math.floor((now - start) / step) + 1) * step
