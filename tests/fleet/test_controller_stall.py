"""The controller's own stall never makes a node stale or unreachable.

A controller starved of CPU for a minute comes back to a fleet whose samples piled up
unread. Judged from their last sample, healthy nodes were unreachable for the whole
stall, and history wrote down downtime the provider owes credits for. The state now
watches its own ticks and counts a node's silence only from the stall's end.
"""

from __future__ import annotations

from fleet.model import NodeSnapshot
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from history.states import NodeStateBook, recorded_state
from tests.fleet.feed import NodeFeed, start

HEALTH = HealthSection(stale_intervals=10, stale_unreachable_s=30)
STALL_S = 60.0


class Monotonic:
    """The controller's monotonic clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _stalled_fleet() -> tuple[FleetState, NodeFeed, Monotonic, float]:
    """A streaming node, then a tick ``STALL_S`` late; returns the stall's end."""
    feed, clock = NodeFeed(), Monotonic()
    state = FleetState([NodeSpec(feed.name)], HEALTH, tick_s=1.0, monotonic=clock)
    start(state, feed, samples=3)
    state.snapshot(feed.t)
    clock.now += STALL_S  # nothing ran: no tick, no line read
    return state, feed, clock, feed.t + STALL_S


def _node(state: FleetState, now: float, clock: Monotonic, name: str) -> NodeSnapshot:
    clock.now += 1.0
    node = state.snapshot(now).node(name)
    assert node is not None
    return node


def test_a_stall_alone_leaves_the_node_streaming_and_up() -> None:
    state, feed, clock, ended = _stalled_fleet()
    book = NodeStateBook(session_file="s.parquet")
    node = _node(state, ended, clock, feed.name)
    assert (node.status, node.state) == ("streaming", "up")
    assert recorded_state(node) == "up"
    # The samples that piled up are read: nothing was ever down.
    for _ in range(int(STALL_S)):
        state.ingest(feed.sample())
    snapshot = state.snapshot(feed.t + 0.5)
    book.apply(snapshot)
    assert {i.state for i in book.intervals()} == {"up"}


def test_after_a_stall_only_observed_silence_counts() -> None:
    state, feed, clock, ended = _stalled_fleet()
    seen = [_node(state, ended + dt, clock, feed.name) for dt in (0, 9.9, 10, 29.9, 30)]
    assert [(n.status, n.state) for n in seen] == [
        ("streaming", "up"),
        ("streaming", "up"),
        ("stale", "up"),
        ("stale", "up"),
        ("stale", "unreachable"),
    ]
    assert seen[-1].broken_reasons == ("no sample for 30 s",)
    assert seen[-1].state_since == ended + 30  # not the last sample's time, in the stall
    assert recorded_state(seen[-1]) == "unreachable"


def test_ticks_on_time_count_silence_from_the_last_sample() -> None:
    feed, clock = NodeFeed(), Monotonic()
    state = FleetState([NodeSpec(feed.name)], HEALTH, tick_s=1.0, monotonic=clock)
    start(state, feed, samples=3)
    last = feed.t
    seen = [_node(state, last + dt, clock, feed.name) for dt in (9.9, 10, 30)]
    assert [(n.status, n.state) for n in seen] == [
        ("streaming", "up"),
        ("stale", "up"),
        ("stale", "unreachable"),
    ]
