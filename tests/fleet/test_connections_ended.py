"""FleetState counts connections that were up and ended: the heap freezer's cue to thaw
(gpufleet.runtime.HeapFreezer), so what counts must be exactly the ends of live links."""

from __future__ import annotations

from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.fleet.feed import NodeFeed, start


def test_only_a_link_that_was_up_counts_when_it_ends(feed: NodeFeed) -> None:
    state = FleetState([NodeSpec(feed.name)], HealthSection())
    state.ingest(feed.status("connecting"))
    state.ingest(feed.status("unreachable", "connection refused"))  # never up
    state.ingest(feed.status("connecting"))
    assert state.connections_ended == 0
    start(state, feed)
    state.ingest(feed.status("stale", "no sample for 3 intervals"))  # still connected
    assert state.connections_ended == 0
    state.ingest(feed.status("unreachable", "reset by peer"))
    assert state.connections_ended == 1
    state.ingest(feed.status("connecting"))  # the retries of a link that is down
    state.ingest(feed.status("unreachable", "timed out"))
    assert state.connections_ended == 1
    start(state, feed)  # back, then down again from streaming
    state.ingest(feed.status("agent-error", "agent exited"))
    assert state.connections_ended == 2
