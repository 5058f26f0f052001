"""What a steady fleet's state keeps tracked by the cyclic collector, per node.

The runtime freezes the heap when the fleet settles and every scheduled full collection
scans what is not frozen: what the state made since and still keeps. Each object kept
per GPU or port and tick is thousands to scan at 3,000 nodes (bench/bench_gc_tracked.py).
Counts, not times: the same on any machine.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from bench.lib.fleet_nodes import CannedNode
from collectors.protocol import decode_line
from collectors.updates import NodeMessage, NodeStatusChange
from fleet.model import FleetSnapshot
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec

NODES = 40
T0 = 1.8e9
SLOW_EVERY = 10  # CannedNode's slow samples: seq 1, 11, 21, ...


class Fleet:
    """``NODES`` canned nodes of 8 GPUs, 8 IB ports and a NIC, streaming into a state."""

    def __init__(self) -> None:
        self.names = [f"node-{i:03d}" for i in range(NODES)]
        self.state = FleetState([NodeSpec(n) for n in self.names], HealthSection())
        self.nodes = [CannedNode(i, 8, 8, 1.0) for i in range(NODES)]
        self.k = 0
        for name, node in zip(self.names, self.nodes, strict=True):
            self.state.ingest(NodeStatusChange(name, "streaming", "", T0))
            self.state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))

    def tick(self) -> FleetSnapshot:
        self.k += 1
        t = T0 + self.k
        for name, node in zip(self.names, self.nodes, strict=True):
            self.state.ingest(NodeMessage(name, decode_line(node.sample(t)), t + 0.01))
        return self.state.snapshot(t + 0.5)


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """Freezing is process-wide: whatever a test froze goes back to the collector."""
    try:
        yield
    finally:
        gc.unfreeze()


def _tracked_since_freeze() -> int:
    # Twice: a tuple is untracked once what it holds is, and a decoded row's outer tuple
    # may be seen before its rows are. In the runtime that happens in the young
    # generations, before anything reaches the old one.
    gc.collect()
    gc.collect()
    return len(gc.get_objects())  # frozen objects are not listed


def test_a_steady_fleet_keeps_few_tracked_objects_per_node(frozen_heap: None) -> None:
    fleet = Fleet()
    snapshot = fleet.tick()  # the first (slow) tick: sessions and tracks are built
    for _ in range(3):
        snapshot = fleet.tick()
    gc.collect()
    gc.freeze()  # as the runtime does when the fleet settles
    base = _tracked_since_freeze()
    for _ in range(2 * SLOW_EVERY):  # two slow ticks among them: hw counters kept
        snapshot = fleet.tick()
    kept = _tracked_since_freeze() - base
    assert snapshot.nodes_streaming == NODES
    assert kept <= 2 * NODES, f"{kept / NODES:.1f} tracked objects kept per node"


def test_a_connected_fleet_keeps_few_tracked_objects_per_port_and_gpu(frozen_heap: None) -> None:
    # What the settle's collection scans: everything the state built since start, while
    # nodes connected (their sessions: tracks, facts, briefs), as long as it is kept.
    gc.collect()
    gc.freeze()
    fleet = Fleet()
    snapshot = fleet.tick()
    for _ in range(3):
        snapshot = fleet.tick()
    kept = _tracked_since_freeze()
    assert snapshot.nodes_streaming == NODES
    # A node has 8 GPUs, 8 ports and a NIC: 17 tracks.
    assert kept <= 40 * NODES, f"{kept / NODES:.1f} tracked objects kept per node"


def test_a_dropped_state_is_freed_with_rows_still_staged() -> None:
    # Untracked objects hide their references from the collector: a cycle through one
    # would never be freed. The fleet's port columns hold the tracks of staged rows until
    # the next flush, so no track may refer to them.
    fleet = Fleet()
    fleet.tick()
    t = T0 + 2
    for name, node in zip(fleet.names, fleet.nodes, strict=True):
        fleet.state.ingest(NodeMessage(name, decode_line(node.sample(t)), t + 0.01))
    assert fleet.state._ports._staged  # the tracks of this sample's port rows
    state = weakref.ref(fleet.state)
    columns = weakref.ref(fleet.state._ports)
    del fleet
    gc.collect()
    assert state() is None
    assert columns() is None
