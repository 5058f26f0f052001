"""Rows a node staged under its last session's layout are read with that layout.

A node's port rows wait in ``PortColumns`` until the tick's flush; a new session that
declares its port fields in another order may start before it. The node flushes its
waiting rows once before the new layout takes effect (not once per port, which at a
fleet start took every other node's rows in as many small flushes).
"""

from __future__ import annotations

from collectors.agent.fields import PORT_FIELDS
from collectors.protocol import Hello, Sample
from fleet.model import FleetSnapshot
from tests.fleet.test_columnar_oracle import Node, _same, _wire, ingest_both, started_states

SYMBOL = PORT_FIELDS.index("symbol_error")
REVERSED = list(reversed(PORT_FIELDS))  # the next session's port fields


class ReorderingNode(Node):
    """A node whose next session sends its port fields in reverse order."""

    reordered = False

    def hello(self) -> Hello:
        hello = super().hello()
        if not self.reordered:
            return hello
        return Hello(**{**{f: getattr(hello, f) for f in hello.__struct_fields__},
                        "port_fields": REVERSED})  # fmt: skip

    def sample(self, advance: float, slow: bool, short: bool) -> Sample:
        sample = super().sample(advance, slow, short)
        if not self.reordered:
            return sample
        ports = [list(reversed(row)) for row in sample.ports]
        return Sample(v=sample.v, t=sample.t, seq=sample.seq, gpus=sample.gpus, ports=ports,
                      nics=sample.nics, lost=sample.lost, slow=sample.slow)  # fmt: skip


def test_rows_staged_before_a_reordered_session_count_under_the_old_layout() -> None:
    nodes = {"a": ReorderingNode("a"), "b": Node("b")}
    states = started_states(dict(nodes))
    ours, reference = states
    node = nodes["a"]
    kept: list[tuple[FleetSnapshot, FleetSnapshot]] = []
    for errors in (0, 3, 9):  # the last session's symbol errors climb, then...
        for row in node.ports:
            row[SYMBOL] = errors
        a_sample = _wire("a", node.sample(1.0, False, False), node.t)
        ingest_both(states, [a_sample, _wire("b", nodes["b"].sample(1.0, False, False), node.t)])
        if errors == 9:  # ...a new session starts before the tick's flush
            node.reordered = True
            ingest_both(states, [_wire("a", node.hello(), node.t)])
            for row in node.ports:
                row[SYMBOL] = 10
            ingest_both(states, [_wire("a", node.sample(1.0, False, False), node.t)])
        kept.append((ours.snapshot(node.t + 0.5), reference.snapshot(node.t + 0.5)))
    for mine, theirs in kept:
        _same(mine, theirs)
    last = kept[-1][0].node("a")
    assert last is not None and last.ports[0].symbol_error_rate is not None


def test_a_fleet_start_flushes_port_rows_once_per_tick_not_once_per_new_port() -> None:
    nodes = {name: Node(name) for name in ("a", "b")}
    ours, _ = started_states(dict(nodes))  # hellos only: no session has begun
    columns = ours._ports
    for node in nodes.values():  # each first sample starts its session (new port tracks)
        ours.ingest(_wire(node.name, node.sample(1.0, False, False), node.t))
    assert columns.flushes == 0  # the rows wait for the tick
    ours.snapshot(max(n.t for n in nodes.values()) + 0.5)
    assert columns.flushes == 1
    for node in nodes.values():  # a new session with rows waiting: the node flushes them
        ours.ingest(_wire(node.name, node.sample(1.0, False, False), node.t))
        ours.ingest(_wire(node.name, node.hello(), node.t))
        ours.ingest(_wire(node.name, node.sample(1.0, False, False), node.t))
    assert columns.flushes == 3
