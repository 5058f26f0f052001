"""NodeSnapshot.sampled_at: the node's own time on its latest sample (latency probes)."""

from __future__ import annotations

from collectors.protocol import decode_line
from collectors.updates import NodeMessage
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from testkit.loopback.canned import SampleMaker, hello_line


def test_sampled_at_is_the_sample_time_not_the_receive_time() -> None:
    state = FleetState([NodeSpec("n1", 2)], HealthSection())
    assert state.snapshot(99.0).nodes[0].sampled_at is None
    state.ingest(NodeMessage("n1", decode_line(hello_line("n1", 2, 100.0)), 100.2))
    maker = SampleMaker(2)
    state.ingest(NodeMessage("n1", decode_line(maker.line(101.0)), 101.4))
    node = state.snapshot(101.5).nodes[0]
    assert (node.sampled_at, node.last_seen) == (101.0, 101.4)
    state.ingest(NodeMessage("n1", decode_line(maker.line(102.0)), 102.3))
    assert state.snapshot(102.5).nodes[0].sampled_at == 102.0
