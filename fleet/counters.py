"""Deltas and rates of cumulative counters, aware of resets and saturation.

Agents send counters raw. Two things make a naive ``(new - old) / dt`` wrong:

- **Resets.** A value that goes down was reset (driver reload, PerfMgt clear, agent
  restart): the increments since the reset are at least the new value, and the rate
  over that interval is unknown (we do not know when the reset happened).
- **Saturation.** InfiniBand PMA counters clamp at all ones instead of wrapping
  (Shanley, *InfiniBand Network Architecture*, ch. 35; widths in
  ``collectors.agent.fields.PORT_COUNTER_BITS``). A pegged value means "rate unknown",
  not a huge rate; the delta up to the ceiling is a lower bound.

A missing reading (``None``) keeps the last good value so the next good reading
still yields a delta across the gap.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec


def ceiling(bits: int | None) -> int | None:
    """The pegged value of a counter ``bits`` wide (None: it never saturates)."""
    return None if bits is None or bits >= 64 else (1 << bits) - 1


@dataclass(frozen=True, slots=True)
class Step:
    """What one new reading says: increments since the previous one, and their rate."""

    delta: int | None  # None: no previous reading to compare with
    rate: float | None  # per second; None when unknown (first, reset, pegged, no time passed)
    reset: bool = False
    saturated: bool = False


def advance(
    previous: int | None, previous_at: float | None, value: int, at: float, top: int | None
) -> Step:
    """Compare a counter reading with the previous good one.

    Args:
        previous: the previous good value, or None for the first reading.
        previous_at: when ``previous`` was read (seconds).
        value: the new reading.
        at: when it was read (seconds, same clock as ``previous_at``).
        top: the value at which the counter is pegged, or None.

    Returns:
        The delta (never negative) and the rate (never negative, or None when unknown).
    """
    pegged = top is not None and value >= top
    if previous is None or previous_at is None:
        return Step(None, None, saturated=pegged)
    if value < previous:
        return Step(value, None, reset=True, saturated=pegged)
    delta = value - previous
    if pegged:
        # Climbed to (or sits at) the ceiling: the true count is unknown, so no rate.
        return Step(delta, None, saturated=True)
    elapsed = at - previous_at
    return Step(delta, delta / elapsed if elapsed > 0 else None)


class Counter(msgspec.Struct, gc=False):
    """One cumulative counter as seen by the controller (mutable, cheap to update).

    It holds numbers only, so the cyclic collector need not track it: three per GPU
    (NVLink replay, recovery, CRC) were 72,000 objects at 3,000 nodes that the settle's
    full collection scanned (bench/bench_gc_tracked.py).
    """

    top: int | None = None
    value: int | None = None  # last good reading
    at: float | None = None
    delta: int | None = None  # increments at the last reading
    rate: float | None = None  # per second over the last interval, None when unknown
    saturated: bool = False
    total: int = 0  # increments seen since the controller started watching

    def update(self, value: int | float | None, at: float) -> None:
        """Take a new reading at time ``at``; ``None`` means the read failed.

        Inlines :func:`advance` (no allocation): this runs ~50,000 times a second.
        """
        if value is None:
            self.delta = None
            self.rate = None
            return
        value = int(value)
        previous, previous_at, top = self.value, self.at, self.top
        self.value, self.at = value, at
        self.saturated = pegged = top is not None and value >= top
        if previous is None or previous_at is None:
            self.delta = self.rate = None
            return
        if value < previous:  # reset: the increments since then are at least the value
            self.delta, self.rate = value, None
        elif pegged:  # clamped: a lower bound of increments, and an unknown rate
            self.delta, self.rate = value - previous, None
        else:
            delta = value - previous
            elapsed = at - previous_at
            self.delta, self.rate = delta, (delta / elapsed if elapsed > 0 else None)
        self.total += self.delta

    def forget(self) -> None:
        """Drop the baseline (a new GPU identity or a new session starts clean)."""
        self.value = None
        self.at = None
        self.delta = None
        self.rate = None
        self.saturated = False
