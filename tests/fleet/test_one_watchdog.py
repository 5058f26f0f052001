"""One watchdog per controller: the stall that keeps a node's silence from counting is
the stall history records as unmonitored time."""

from __future__ import annotations

from fleet.watchdog import TickWatchdog
from history.blindness import MonitorBlindness
from history.coverage import CoverageBook
from history.gaps import GapBook

T0 = 1_790_000_000.0


class Monotonic:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_same_tick_asked_twice_gets_the_same_stall() -> None:
    clock = Monotonic()
    watchdog = TickWatchdog(1.0, monotonic=clock)
    assert watchdog.beat(T0) is None
    clock.now += 60.0
    stall = watchdog.beat(T0 + 60)
    assert stall is not None
    assert watchdog.beat(T0 + 60) is stall  # the recorder asks after the state did
    assert watchdog.stalls == [stall]
    clock.now += 1.0
    assert watchdog.beat(T0 + 61) is None


def test_history_records_the_stall_the_state_saw_first() -> None:
    clock = Monotonic()
    shared = TickWatchdog(1.0, monotonic=clock)
    blindness = MonitorBlindness(1.0, (), shared)
    coverage, gaps = CoverageBook("session", 5.0), GapBook("session")
    shared.beat(T0)  # the state judges the tick first ...
    blindness.observe(T0, None, coverage, gaps)  # ... then history records it
    clock.now += 60.0
    assert shared.beat(T0 + 60) is not None
    assert blindness.observe(T0 + 60, T0, coverage, gaps)  # blind: settling after the stall
    (gap,) = gaps.all()
    assert "controller stalled: no tick for 60.0 s" in gap.cause
