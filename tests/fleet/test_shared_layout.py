"""Sessions that declare the same field lists share one layout; others keep their own.

At 1,000 nodes of one agent version a layout per node was ~8 MiB of identical dicts,
tuples and strings. Sharing must not let one node's declared order leak into another
node whose agent declares a different one.
"""

from __future__ import annotations

import msgspec

from collectors.agent.fields import PORT_FIELDS
from collectors.protocol import Hello, Sample
from fleet.config.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from fleet.state import layout as layout_module
from fleet.state.layout import session_layout
from tests.fleet.feed import NodeFeed, start, started_fleet


def _reordered(hello: Hello) -> Hello:
    return msgspec.structs.replace(hello, port_fields=list(reversed(PORT_FIELDS)))


def test_nodes_with_equal_field_lists_share_one_layout_and_one_copy_of_the_lists() -> None:
    state = started_fleet(NodeFeed("gpu-001"), NodeFeed("gpu-002"))
    a, b = state._nodes["gpu-001"], state._nodes["gpu-002"]
    assert a.layout is b.layout
    assert a.hello is not None and b.hello is not None
    assert a.hello.port_fields is b.hello.port_fields
    assert a.hello.host == "gpu-001" and b.hello.host == "gpu-002"


def test_a_node_declaring_another_order_reads_its_rows_with_its_own_layout() -> None:
    usual, odd = NodeFeed("gpu-001", ports=1), NodeFeed("gpu-002", ports=1)
    state = FleetState([NodeSpec("gpu-001"), NodeSpec("gpu-002")], HealthSection())
    start(state, usual)
    state.ingest(odd.status("streaming"))
    hello = odd.hello()
    assert isinstance(hello.message, Hello)
    state.ingest(msgspec.structs.replace(hello, message=_reordered(hello.message)))
    assert state._nodes["gpu-002"].layout is not state._nodes["gpu-001"].layout
    odd.ports[0]["symbol_error"] = 7
    usual.ports[0]["symbol_error"] = 3
    sample = odd.sample()
    assert isinstance(sample.message, Sample)
    reordered = [list(reversed(sample.message.ports[0]))]
    state.ingest(
        msgspec.structs.replace(
            sample, message=msgspec.structs.replace(sample.message, ports=reordered)
        )
    )
    state.ingest(usual.sample())
    by_name = {node.name: node for node in state.snapshot(usual.t + 0.5).nodes}
    assert dict(by_name["gpu-002"].ports[0].counters)["symbol_error"] == 7
    assert dict(by_name["gpu-001"].ports[0].counters)["symbol_error"] == 3


def test_layouts_kept_are_bounded_for_agents_that_keep_declaring_new_lists() -> None:
    feed = NodeFeed()
    base = feed.hello().message
    assert isinstance(base, Hello)
    for k in range(200):
        hello = msgspec.structs.replace(base, nic_fields=[*base.nic_fields, f"extra_{k}"])
        layout, kept = session_layout(hello)
        assert layout.nic.names[-1] == f"extra_{k}"
        assert kept.nic_fields[-1] == f"extra_{k}"
    assert len(layout_module._layouts) <= layout_module._KEPT_LAYOUTS
