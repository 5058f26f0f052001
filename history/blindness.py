"""When the controller itself cannot observe: stalled, settling after a stall, or offline.

The recorder asks :class:`MonitorBlindness` once per tick. While blind, coverage does
not grow (the time is unmonitored), each stretch is written to ``monitor_gaps`` with
its cause, and an unreachable node is recorded as unmonitored: the controller cannot
tell whose fault it is.
"""

from __future__ import annotations

import logging

from fleet.watchdog import TickWatchdog, WitnessMonitor
from history.coverage import CoverageBook
from history.gaps import GapBook

log = logging.getLogger(__name__)

NETWORK_DOWN = "controller network down: no witness answered"


class MonitorBlindness:
    """The tick watchdog and the witness check, turned into coverage and gap records."""

    def __init__(
        self,
        tick_s: float | None,
        witnesses: tuple[str, ...],
        watchdog: TickWatchdog | None = None,
    ) -> None:
        # Only a live controller measures its own ticks; replayed or synthetic snapshots don't.
        # A live one hands in the watchdog its fleet state beats, so both see one stall.
        if watchdog is None and tick_s is not None:
            watchdog = TickWatchdog(tick_s)
        self.watchdog = watchdog
        self.witness: WitnessMonitor | None = None
        if witnesses:
            self.witness = WitnessMonitor(witnesses, max(1.0, tick_s or 1.0))
            self.witness.start()
        self._blind_until_ms = 0  # observations before this are the monitor's (settling)
        self._network_was_down = False

    def observe(
        self, taken_at: float, last_t: float | None, coverage: CoverageBook, gaps: GapBook
    ) -> bool:
        """A tick at ``taken_at``: extend ``coverage`` unless blind; returns whether blind."""
        t_ms = round(taken_at * 1000)
        settle_ms = round(self.watchdog.settle_s * 1000) if self.watchdog is not None else 0
        stall = self.watchdog.beat(taken_at) if self.watchdog is not None else None
        if stall is not None:
            self._blind_until_ms = t_ms + settle_ms
            coverage.cut()
            gaps.add(round(stall.start * 1000), self._blind_until_ms, stall.cause)
            log.warning("%s; that time is recorded as unmonitored", stall.cause)
        if self.witness is not None and self.witness.network_down:
            since = t_ms if last_t is None else round(last_t * 1000)
            self._blind_until_ms = max(self._blind_until_ms, t_ms + settle_ms)
            coverage.cut()
            gaps.add(since, self._blind_until_ms, NETWORK_DOWN)
            if not self._network_was_down:
                log.warning("%s; that time is recorded as unmonitored", self.witness.cause)
            self._network_was_down = True
            return True
        self._network_was_down = False
        if t_ms < self._blind_until_ms:
            return True
        coverage.extend(t_ms)
        return False

    def close(self) -> None:
        """Stop the witness thread."""
        if self.witness is not None:
            self.witness.stop()
