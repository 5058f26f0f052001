"""A node's garbage marks that node only; the rest of the fleet keeps its verdicts."""

from __future__ import annotations

from collectors.protocol import Sample
from collectors.updates import NodeMessage
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.fleet.feed import NodeFeed, start


def test_short_and_missing_rows_read_as_missing_values() -> None:
    good, odd = NodeFeed("gpu-001"), NodeFeed("gpu-002", gpus=2, ports=1)
    state = FleetState([NodeSpec(good.name), NodeSpec(odd.name, expected_gpus=2)], HealthSection())
    start(state, good)
    start(state, odd)
    odd.t += 1
    short = Sample(1, odd.t, 99, gpus=[[50, 20]], ports=[[4]], slow=[[0, 1]])
    state.ingest(NodeMessage(odd.name, short, odd.t))
    snap = state.snapshot(odd.t)
    node = snap.node(odd.name)
    assert node is not None
    gpu0, gpu1 = node.gpus
    assert (gpu0.util_gpu, gpu0.temp_c, gpu0.ecc_unc_vol) == (50, None, 1)
    assert gpu0.verdict == "fail"  # ecc_unc_vol = 1 was in the short slow row
    assert gpu1.lost and gpu1.verdict == "lost"  # no row at all for GPU 1
    assert node.ports[0].state == "ACTIVE" and node.ports[0].rate_gbps is None
    other = snap.node(good.name)
    assert other is not None and other.state == "up"


def test_events_for_unknown_gpus_are_recorded_without_effect() -> None:
    feed = NodeFeed(gpus=2)
    state = FleetState([NodeSpec(feed.name, expected_gpus=2)], HealthSection())
    start(state, feed)
    state.ingest(feed.event("xid", gpu=None, code=79))
    snap = state.snapshot(feed.t)
    assert [e.code for e in snap.new_events] == [79]
    assert snap.nodes[0].state == "up"


def test_expected_rate_rises_when_a_faster_port_appears() -> None:
    feed = NodeFeed(gpus=1, ports=2)
    feed.ports[0]["rate_gbps"] = feed.ports[1]["rate_gbps"] = 200.0
    state = FleetState([NodeSpec(feed.name, expected_gpus=1)], HealthSection())
    start(state, feed)
    assert state.snapshot(feed.t).nodes[0].ports[0].verdict == "ok"
    feed.ports[1]["rate_gbps"] = 400.0
    state.ingest(feed.sample())
    port = state.snapshot(feed.t).nodes[0].ports[0]
    assert (port.verdict, port.expected_rate_gbps) == ("warn", 400.0)


def test_an_xid_for_an_unknown_uuid_marks_no_gpu() -> None:
    feed = NodeFeed(gpus=2)
    state = FleetState([NodeSpec(feed.name, expected_gpus=2)], HealthSection())
    start(state, feed)
    feed.uuids[1] = "GPU-old-board"  # the event names a board this session does not have
    state.ingest(feed.event("xid", gpu=1, code=79))
    snap = state.snapshot(feed.t)
    assert snap.nodes[0].gpus[1].verdict == "ok"
    assert [(e.code, e.uuid) for e in snap.new_events] == [(79, "GPU-old-board")]
