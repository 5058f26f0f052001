"""A flush where every counter moved as usual advances them as the full rules do.

Every port's counters read, at or above their last values, below their ceilings, time
moved on: the flush takes a shorter path. Node ``a`` here is fed the same samples in two
fleets; in one of them another node's counter resets in the same flush, so the whole
flush takes the full rules. Node ``a``'s columns must come out the same, bit for bit.
"""

from __future__ import annotations

import numpy as np

from fleet.state import FleetState
from tests.fleet.feed import NodeFeed, started_fleet

STEPS = (
    {"port_xmit_data": 4_000_000, "symbol_error": 0, "port_rcv_data": 10},
    {"port_xmit_data": 9_500_001, "symbol_error": 2, "port_rcv_data": 10},  # errors moved
    {"port_xmit_data": 9_500_001, "symbol_error": 2, "port_rcv_data": 2**53 + 7},
)


def _columns(state: FleetState, slots: list[int]) -> list[np.ndarray]:
    ports = state._ports
    return [
        getattr(ports, name)[slots].copy()
        for name in ("last", "last_at", "delta", "rate", "total", "saturated")
    ]


def test_node_a_advances_alike_whether_or_not_another_port_reset_in_its_flush() -> None:
    alone, beside = NodeFeed("gpu-a", gpus=1, ports=2), NodeFeed("gpu-a", gpus=1, ports=2)
    other = NodeFeed("gpu-b", gpus=1, ports=1)
    other.ports[0]["port_xmit_data"] = 100_000
    usual, full = started_fleet(alone), started_fleet(beside, other)
    slots = [track.slot for track in usual._nodes["gpu-a"].ports]
    assert slots == [track.slot for track in full._nodes["gpu-a"].ports]
    for k, step in enumerate(STEPS):
        for feed in (alone, beside):
            for port in feed.ports:
                port.update({name: value + k for name, value in step.items()})
        other.ports[0]["port_xmit_data"] = 9_000 - 1_000 * k  # a reset in every flush
        usual.ingest(alone.sample())
        full.ingest(beside.sample())
        full.ingest(other.sample())
        usual.snapshot(alone.t + 0.5)
        full.snapshot(beside.t + 0.5)
        for mine, theirs in zip(_columns(usual, slots), _columns(full, slots), strict=True):
            np.testing.assert_array_equal(mine, theirs)
    rates = usual._ports.rate[slots]
    assert np.isfinite(rates[:, : len(usual._ports.ib_tracked)]).all()  # every rate known
