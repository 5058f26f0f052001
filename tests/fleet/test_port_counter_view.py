"""PortSnapshot.counters always holds the latest raw counters, tick after tick."""

from __future__ import annotations

from collectors.agent.fields import PORT_FIELDS, PROTOCOL_VERSION
from collectors.protocol import Sample, Value, decode_line
from collectors.updates import NodeMessage
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from testkit.loopback.canned import hello_line

COUNTERS = PORT_FIELDS[3:]  # state, phys_state and rate_gbps are not counters


def _port_row(values: dict[str, Value]) -> list[Value]:
    row: list[Value] = [4, 5, 400.0, *([0] * len(COUNTERS))]
    for name, value in values.items():
        row[PORT_FIELDS.index(name)] = value
    return row


def _sample(seq: int, t: float, **values: Value) -> Sample:
    return Sample(
        v=PROTOCOL_VERSION,
        t=t,
        seq=seq,
        gpus=[[50, 10, 40.0, 10.0, 1000, 300.0, 50, 1500, 0, 0]],
        ports=[_port_row(values)],
    )


def test_counters_follow_every_sample_including_ones_that_return_to_earlier_values() -> None:
    state = FleetState([NodeSpec("n1", 1)], HealthSection())
    state.ingest(NodeMessage("n1", decode_line(hello_line("n1", 1, 100.0, ports=1)), 100.0))
    steps: list[dict[str, Value]] = [
        {"port_xmit_data": 1_000, "symbol_error": 0},
        {"port_xmit_data": 2_000, "symbol_error": 3},
        {"port_xmit_data": 3_000, "symbol_error": 3, "VL15_dropped": None},
        {"port_xmit_data": 3_000, "symbol_error": 0, "VL15_dropped": 7},
    ]
    for seq, values in enumerate(steps, start=1):
        t = 100.0 + seq
        state.ingest(NodeMessage("n1", _sample(seq, t, **values), t))
        counters = dict(state.snapshot(t + 0.5).nodes[0].ports[0].counters)
        assert list(counters) == list(COUNTERS)
        expected = {name: 0 for name in COUNTERS} | values
        assert counters == expected
        assert all(type(counters[n]) is type(expected[n]) for n in COUNTERS)
