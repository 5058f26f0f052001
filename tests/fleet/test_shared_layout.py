"""Sessions that declare the same field lists share one layout; others keep their own.

At 1,000 nodes of one agent version a layout per node was ~8 MiB of identical dicts,
tuples and strings. Sharing must not let one node's declared order leak into another
node whose agent declares a different one.
"""

from __future__ import annotations

import msgspec

from collectors.agent.fields import PORT_FIELDS
from collectors.protocol import Hello, Sample, Value
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from fleet.state import layout as layout_module
from fleet.state.layout import session_layout
from fleet.state.port import PortTrack
from tests.fleet.feed import NodeFeed, start, started_fleet


def _reordered(hello: Hello) -> Hello:
    return msgspec.structs.replace(hello, port_fields=list(reversed(PORT_FIELDS)))


def _one_node_reordered(usual: NodeFeed, odd: NodeFeed) -> FleetState:
    """A fleet of ``usual`` and ``odd``, whose agent declares its port fields reversed;
    ``odd``'s first sample is in, ``usual``'s next one is not."""
    state = FleetState([NodeSpec(usual.name), NodeSpec(odd.name)], HealthSection())
    start(state, usual)
    state.ingest(odd.status("streaming"))
    hello = odd.hello()
    assert isinstance(hello.message, Hello)
    state.ingest(msgspec.structs.replace(hello, message=_reordered(hello.message)))
    sample = odd.sample()
    assert isinstance(sample.message, Sample)
    reordered = [list(reversed(sample.message.ports[0]))]
    state.ingest(
        msgspec.structs.replace(
            sample, message=msgspec.structs.replace(sample.message, ports=reordered)
        )
    )
    return state


def test_nodes_with_equal_field_lists_share_one_layout_and_one_copy_of_the_lists() -> None:
    state = started_fleet(NodeFeed("gpu-001"), NodeFeed("gpu-002"))
    a, b = state._nodes["gpu-001"], state._nodes["gpu-002"]
    assert a.layout is b.layout
    assert a.hello is not None and b.hello is not None
    assert a.hello.port_fields is b.hello.port_fields
    assert a.hello.host == "gpu-001" and b.hello.host == "gpu-002"


def test_a_node_declaring_another_order_reads_its_rows_with_its_own_layout() -> None:
    usual, odd = NodeFeed("gpu-001", ports=1), NodeFeed("gpu-002", ports=1)
    odd.ports[0]["symbol_error"] = 7
    usual.ports[0]["symbol_error"] = 3
    state = _one_node_reordered(usual, odd)
    assert state._nodes["gpu-002"].layout is not state._nodes["gpu-001"].layout
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


def test_ports_of_nodes_sharing_a_layout_share_their_counter_names_and_reader() -> None:
    state = started_fleet(NodeFeed("gpu-001", ports=2), NodeFeed("gpu-002", ports=2))
    tracks = [*state._nodes["gpu-001"].ports, *state._nodes["gpu-002"].ports]
    first = tracks[0]
    assert "symbol_error" in first.counter_names and "state" not in first.counter_names
    for track in tracks[1:]:
        assert track.counter_names is first.counter_names
        assert track.counter_values is first.counter_values


def test_a_port_declared_in_another_order_reads_its_counters_by_its_own_positions() -> None:
    state = _one_node_reordered(NodeFeed("gpu-001", ports=1), NodeFeed("gpu-002", ports=1))
    mine, theirs = state._nodes["gpu-002"].ports[0], state._nodes["gpu-001"].ports[0]
    assert mine.counter_names is not theirs.counter_names
    value = {name: 100 + k for k, name in enumerate(PORT_FIELDS)}

    def counters(track: PortTrack) -> dict[str, Value]:
        row = [value.get(name) for name in track.index.names]
        return dict(zip(track.counter_names, track.counter_values(row), strict=True))

    assert counters(mine)["symbol_error"] == value["symbol_error"]
    assert counters(mine) == {n: v for n, v in counters(theirs).items() if n in PORT_FIELDS}


def test_values_nodes_send_alike_are_one_kept_copy_and_each_keeps_its_own_type() -> None:
    a, b = NodeFeed("gpu-001"), NodeFeed("gpu-002")
    state = started_fleet(a, b)
    one, two = state._nodes["gpu-001"].hello, state._nodes["gpu-002"].hello
    assert one is not None and two is not None
    assert one.gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert one.gpus[0].name is two.gpus[0].name is two.gpus[7].name
    assert one.ports[1].kind is two.ports[0].kind
    assert one.ports[1].name is two.ports[1].name
    assert one.gpus[0].uuid != two.gpus[0].uuid  # what differs stays each node's own
    assert layout_module._one(700) is not layout_module._one(700.0)
    assert type(layout_module._one(700.0)) is float


def test_healthy_ports_keep_one_facts_key_and_a_port_that_changes_gets_its_own() -> None:
    a, b = NodeFeed("gpu-001", ports=2), NodeFeed("gpu-002", ports=2)
    state = started_fleet(a, b)
    state.snapshot(b.t + 0.5)  # the ports' facts are read at the tick
    keys = [p.facts_key for n in ("gpu-001", "gpu-002") for p in state._nodes[n].ports]
    assert keys[0][:3] == ("ACTIVE", "LinkUp", 400.0)
    assert all(key is keys[0] for key in keys)
    b.ports[1]["state"] = 1  # DOWN
    state.ingest(b.sample())
    state.snapshot(b.t + 0.5)
    down = state._nodes["gpu-002"].ports[1].facts_key
    assert down is not keys[0] and down[0] == "DOWN"
    assert state._nodes["gpu-002"].ports[0].facts_key is keys[0]
