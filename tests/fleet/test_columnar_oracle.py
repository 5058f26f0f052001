"""Property: the columnar state gives the snapshots the object-per-tick state gave.

Both states (``fleet.state`` and the oracle ``tests.fleet.reference``, the state it
replaced) ingest the same random message sequences: counters that climb, reset, peg
at their width or go missing, link states and rates that change, GPUs lost and back,
short rows, two samples before one tick, XIDs, new sessions and dropped connections.
After every tick the fleet snapshots must be equal, GPU and port objects included
(the columnar ones are built lazily from the tick's rows, so reading them here also
checks that later ingests never reach an earlier snapshot).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.agent.fields import (
    GPU_FIELDS,
    GPU_SLOW_FIELDS,
    NIC_FIELDS,
    PORT_COUNTER_BITS,
    PORT_FIELDS,
    PROTOCOL_VERSION,
)
from collectors.protocol import Event, GpuInfo, Hello, PortInfo, Sample, Value, decode_line
from collectors.updates import NodeMessage, NodeStatusChange, NodeUpdate
from fleet.model import FleetSnapshot, GpuBrief, PortBrief
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.fleet.reference.fleet import FleetState as ReferenceState
from tests.fleet.reference.node import NodeSpec as ReferenceSpec

# name -> (GPUs, IB ports, NICs)
NODES = {"a": (2, 3, 1), "b": (3, 2, 0)}
COUNTERS = PORT_FIELDS[3:]
NIC_COUNTERS = NIC_FIELDS[2:]


def _top(name: str) -> int:
    bits = PORT_COUNTER_BITS.get(name, 64)
    return (1 << bits) - 1 if bits < 64 else 1 << 50  # past 2**53 float64 rounds


class Node:
    """One made-up node whose readings the drawn actions change."""

    def __init__(self, name: str) -> None:
        self.name = name
        gpus, ports, nics = NODES[name]
        self.t = 1_000.0
        self.seq = 0
        self.fast: list[list[Value]] = [[50, 20, 40.0, 10.0, 1024, 300.5, 55, 1980, 0, 0]] * gpus
        self.slow: list[list[Value]] = [[0] * len(GPU_SLOW_FIELDS) for _ in range(gpus)]
        for row in self.slow:
            row[GPU_SLOW_FIELDS.index("nvlink_active")] = 4
            row[GPU_SLOW_FIELDS.index("nvlink_total")] = 4
        self.ports: list[list[Value]] = [
            [4, 5, 400.0, *([0] * len(COUNTERS))] for _ in range(ports)
        ]
        self.nics: list[list[Value]] = [
            [1, 100_000, *([0] * len(NIC_COUNTERS))] for _ in range(nics)
        ]
        self.lost: set[int] = set()

    def hello(self) -> Hello:
        gpus, ports, nics = NODES[self.name]
        return Hello(
            v=PROTOCOL_VERSION,
            t=self.t,
            agent="oracle",
            host=self.name,
            interval=1.0,
            slow_interval=10.0,
            gpu_fields=list(GPU_FIELDS),
            gpu_slow_fields=list(GPU_SLOW_FIELDS),
            port_fields=list(PORT_FIELDS),
            nic_fields=list(NIC_FIELDS),
            gpus=[GpuInfo(i, f"GPU-{self.name}-{i}", "H100", serial=f"S{i}") for i in range(gpus)],
            ports=[PortInfo(f"mlx5_{i}/1", "ib", data_bits=32 if i else 64) for i in range(ports)],
            nics=[PortInfo(f"eth{i}", "eth") for i in range(nics)],
        )

    def sample(self, advance: float, slow: bool, short: bool) -> Sample:
        self.t += advance
        self.seq += 1
        gpus = [None if i in self.lost else list(row) for i, row in enumerate(self.fast)]
        ports = [list(row[:10]) if short else list(row) for row in self.ports]
        return Sample(
            v=PROTOCOL_VERSION,
            t=self.t,
            seq=self.seq,
            gpus=gpus,
            ports=ports,
            nics=[list(row) for row in self.nics],
            lost=sorted(self.lost),
            slow=[list(row) for row in self.slow] if slow else None,
        )


def started_states(nodes: dict[str, Any]) -> tuple[FleetState, ReferenceState]:
    """Our state and the reference, each told that every node in ``nodes`` (each with
    ``t`` and ``hello()``) is streaming and has said hello."""
    health = HealthSection()
    ours = FleetState([NodeSpec(n, NODES[n][0]) for n in NODES], health)
    reference = ReferenceState([ReferenceSpec(n, NODES[n][0]) for n in NODES], health)
    for name, node in nodes.items():
        for update in (
            NodeStatusChange(name, "streaming", "", node.t),
            _wire(name, node.hello(), node.t),
        ):
            ingest_both((ours, reference), [update])
    return ours, reference


def ingest_both(states: tuple[FleetState, ReferenceState], updates: Iterable[Any]) -> None:
    """Each update into our state and then the reference, in order."""
    ours, reference = states
    for update in updates:
        ours.ingest(update)
        reference.ingest(update)


def snapshots_of_both(
    states: tuple[FleetState, ReferenceState], nodes: dict[str, Any]
) -> tuple[FleetSnapshot, FleetSnapshot]:
    """Both states' snapshots half a second after the latest node's clock."""
    now = max(n.t for n in nodes.values()) + 0.5
    return states[0].snapshot(now), states[1].snapshot(now)


def _wire(node: str, message: Any, at: float) -> NodeMessage:
    return NodeMessage(node, decode_line(msgspec.json.encode(message)), at)


@st.composite
def counter_change(draw: st.DrawFn, names: tuple[str, ...], offset: int) -> tuple[int, Value]:
    i = draw(st.integers(0, len(names) - 1))
    name = names[i]
    kind = draw(st.sampled_from(["climb", "climb", "climb", "reset", "peg", "missing"]))
    value: Value = {
        "climb": draw(st.integers(0, 5_000)),
        "reset": draw(st.integers(0, 3)),
        "peg": _top(name),
        "missing": None,
    }[kind]
    return offset + i, (kind, value)  # type: ignore[return-value]


def _apply_change(row: list[Value], at: int, change: tuple[str, Value]) -> None:
    kind, value = change
    if kind == "climb":
        row[at] = int(row[at] or 0) + int(value or 0)
    else:
        row[at] = value


def _draw_mutations(draw: st.DrawFn, node: Node) -> None:
    for row in node.ports:
        for _ in range(draw(st.integers(0, 3))):
            at, change = draw(counter_change(COUNTERS, 3))
            _apply_change(row, at, change)
        if draw(st.integers(0, 9)) == 0:
            row[0] = draw(st.sampled_from([4, 1, None]))
            row[2] = draw(st.sampled_from([400.0, 200.0, None]))
    for row in node.nics:
        for _ in range(draw(st.integers(0, 2))):
            at, change = draw(counter_change(NIC_COUNTERS, 2))
            _apply_change(row, at, change)
        if draw(st.integers(0, 9)) == 0:
            row[0] = draw(st.sampled_from([0, 1, None]))
    for i in range(len(node.fast)):
        if draw(st.integers(0, 3)) == 0:
            util = draw(st.one_of(st.none(), st.integers(0, 100)))
            node.fast[i] = [util, *node.fast[i][1:8], draw(st.sampled_from([0, 0x40])), 0]
    if draw(st.integers(0, 7)) == 0:
        node.lost ^= {draw(st.integers(0, len(node.fast) - 1))}
    if draw(st.integers(0, 7)) == 0:
        gpu = draw(st.integers(0, len(node.slow) - 1))
        node.slow[gpu][GPU_SLOW_FIELDS.index("ecc_unc_vol")] = draw(st.integers(0, 2))
        node.slow[gpu][GPU_SLOW_FIELDS.index("nvlink_active")] = draw(st.sampled_from([3, 4]))


def _step(draw: st.DrawFn, nodes: dict[str, Node]) -> list[NodeUpdate]:
    node = nodes[draw(st.sampled_from(sorted(nodes)))]
    action = draw(st.sampled_from(["sample"] * 8 + ["hello", "xid", "drop"]))
    if action == "hello":
        return [_wire(node.name, node.hello(), node.t)]
    if action == "xid":
        gpu = draw(st.integers(0, len(node.fast) - 1))
        code = draw(st.sampled_from([13, 48, 79]))
        event = Event(PROTOCOL_VERSION, node.t, "xid", gpu, f"GPU-{node.name}-{gpu}", code, "")
        return [_wire(node.name, event, node.t)]
    if action == "drop":
        return [NodeStatusChange(node.name, "unreachable", "reset by peer", node.t, True)]
    _draw_mutations(draw, node)
    advance = draw(st.sampled_from([1.0, 1.0, 0.5, 3.0, 0.0]))
    sample = node.sample(advance, draw(st.booleans()), draw(st.integers(0, 9)) == 0)
    return [_wire(node.name, sample, node.t + 0.01)]


def same_nodes(ours: FleetSnapshot, reference: FleetSnapshot) -> None:
    """Every node, its GPUs, ports, NICs and briefs, the transitions and the events."""
    assert [n.name for n in ours.nodes] == [n.name for n in reference.nodes]
    for mine, theirs in zip(ours.nodes, reference.nodes, strict=True):
        assert mine.gpus == theirs.gpus, mine.name
        assert mine.ports == theirs.ports, mine.name
        assert mine.nics == theirs.nics, mine.name
        assert mine == theirs
        assert mine.gpu_briefs == tuple(map(GpuBrief.of, theirs.gpus))
        assert mine.port_briefs == tuple(map(PortBrief.of, theirs.ports))
    assert ours.transitions == reference.transitions
    assert ours.new_events == reference.new_events


def _same(ours: FleetSnapshot, reference: FleetSnapshot) -> None:
    same_nodes(ours, reference)
    # Summed in slot order (nodes in the order they said hello), not node order.
    assert ours.utilization.now == pytest.approx(reference.utilization.now, rel=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_columnar_state_gives_the_snapshots_of_the_object_state(data: st.DataObject) -> None:
    nodes = {name: Node(name) for name in NODES}
    states = started_states(nodes)
    kept: list[tuple[FleetSnapshot, FleetSnapshot]] = []
    for _ in range(data.draw(st.integers(3, 25))):
        for _ in range(data.draw(st.sampled_from([1, 1, 1, 2, 3]))):
            ingest_both(states, _step(data.draw, nodes))
        kept.append(snapshots_of_both(states, nodes))
    for mine, theirs in kept:  # read late: later ingests must not have reached them
        _same(mine, theirs)
