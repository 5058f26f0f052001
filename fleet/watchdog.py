"""The controller watching itself: a stalled monitor must not look like a watched fleet.

A controller that is SIGSTOPped, starved of CPU or swapped out keeps its last
snapshot; when it comes back, its first ticks judge nodes on data that piled up
while it was away. The :class:`TickWatchdog` measures the gap between ticks on the
monotonic clock (wall time may jump) and reports a :class:`Stall` when a tick came
later than a few intervals: that stretch, and a short settling time after it, is the
monitor's blindness, recorded as unmonitored (docs/sla.md, "Three kinds of time").
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# A tick later than this many intervals means the controller itself was not running.
LATE_INTERVALS = 3.0
# After a stall, this many intervals pass before observations count again: streams
# that piled up are drained and stale judgements replaced by fresh ones.
SETTLE_INTERVALS = 3.0
# Never call a gap shorter than this a stall, whatever the interval (scheduler noise).
MIN_STALL_S = 2.0


@dataclass(frozen=True, slots=True)
class Stall:
    """The controller did not tick from ``start`` to ``end`` (wall-clock seconds)."""

    start: float  # wall time of the last tick before the stall
    end: float  # wall time of the first tick after it
    seconds: float  # the gap as the monotonic clock measured it

    @property
    def cause(self) -> str:
        """The stall in words, for the coverage log."""
        return f"controller stalled: no tick for {self.seconds:.1f} s"


class TickWatchdog:
    """Reports a :class:`Stall` when consecutive ticks are further apart than a few intervals."""

    def __init__(
        self,
        interval_s: float,
        *,
        late_intervals: float = LATE_INTERVALS,
        settle_intervals: float = SETTLE_INTERVALS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.threshold_s = max(MIN_STALL_S, late_intervals * interval_s)
        self.settle_s = settle_intervals * interval_s
        self._monotonic = monotonic
        self._last: tuple[float, float] | None = None  # (monotonic, wall) of the last tick
        self._last_stall: Stall | None = None  # what the last tick's beat answered
        self.stalls: list[Stall] = []

    def beat(self, wall: float) -> Stall | None:
        """A tick happens now (its snapshot taken at ``wall``); the stall it ends, if any.

        Asked again for the same tick (the same ``wall``), it answers as the first time:
        the fleet state and the history recorder share one watchdog, so the stall that
        keeps silence from counting is the very stall recorded as unmonitored.
        """
        if self._last is not None and wall == self._last[1]:
            return self._last_stall
        now = self._monotonic()
        last, self._last = self._last, (now, wall)
        self._last_stall = None
        if last is None or now - last[0] <= self.threshold_s:
            return None
        stall = Stall(start=last[1], end=wall, seconds=now - last[0])
        self.stalls.append(stall)
        self._last_stall = stall
        return stall


class WitnessMonitor:
    """Checks the ``[sla] witness`` hosts from a thread: is the controller's own network up?

    Each check opens a TCP connection to every ``host:port`` (and closes it). When every
    witness fails, the controller cannot tell a lost fleet from its own lost network,
    so what it sees meanwhile is unmonitored, not down. A thread, not the event loop:
    a busy loop must not make the network look down.
    """

    def __init__(
        self, witnesses: tuple[str, ...], interval_s: float, timeout_s: float = 3.0
    ) -> None:
        self.witnesses = witnesses
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.network_down = False
        self.checks = 0  # completed rounds (tests wait on this)
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sla-witness", daemon=True)

    def start(self) -> None:
        """Begin checking in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop checking (returns once the thread has ended)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.timeout_s + self.interval_s + 1)

    def check_once(self) -> bool:
        """One round; True when at least one witness answered."""
        errors = []
        for witness in self.witnesses:
            host, _, port = witness.rpartition(":")
            try:
                with socket.create_connection((host.strip("[]"), int(port)), self.timeout_s):
                    return True
            except OSError as exc:
                errors.append(f"{witness}: {exc.strerror or exc}")
        self.last_error = "; ".join(errors)
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            self.network_down = not self.check_once()
            self.checks += 1
            self._stop.wait(self.interval_s)

    @property
    def cause(self) -> str:
        """The controller's network trouble in words, for the coverage log."""
        return f"controller network down: no witness answered ({self.last_error})"
