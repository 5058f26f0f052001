"""Ports' hardware counters, kept compactly, read as the decoded dicts they came from.

The state keeps each port's ``hw`` counters as one shared copy of their names and a tuple
of their values (``fleet.state.hw_counters``). The reference object state keeps the
decoded dicts: every tick's snapshots and /metrics (raw port counters on, read from the
state's rows on our side and from objects on the reference's) must be the same, with
counters past 2**53 and at the 64-bit ends, ports that send none, names that differ
between ports and change between slow ticks, and a new session on the same ports.
"""

from __future__ import annotations

from collectors.protocol import Sample
from exporter.text import render_exposition
from fleet.state.hw_counters import HwCounters, kept_counters
from tests.fleet.test_columnar_oracle import (
    Node,
    _same,
    _wire,
    ingest_both,
    snapshots_of_both,
    started_states,
)

MLX5 = ("out_of_buffer", "out_of_sequence", "np_cnp_sent", "rp_cnp_handled")
EFA = ("rdma_read_bytes", "rdma_write_bytes", "tx_pkts")
BIG = (1 << 64) - 1  # uint64's largest: a float64 would round it


class HwNode(Node):
    """An oracle node whose slow samples carry per-port hw counters that move."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.names: list[tuple[str, ...]] = [MLX5 if i % 3 else EFA for i in range(len(self.ports))]
        if self.names:
            self.names[-1] = ()  # a port that sends no hw counters

    def hw(self) -> list[dict[str, int]]:
        seq = self.seq
        return [
            {name: (BIG - seq if k == 0 else (1 << 60) + seq * 7 + k) for k, name in enumerate(n)}
            if i != 0
            else {name: -seq - k for k, name in enumerate(n)}  # int64's side: a tuple, not u64
            for i, n in enumerate(self.names)
        ]

    def sample(self, advance: float, slow: bool, short: bool) -> Sample:
        sample = super().sample(advance, slow, short)
        if not slow:
            return sample
        return Sample(
            v=sample.v,
            t=sample.t,
            seq=sample.seq,
            gpus=sample.gpus,
            ports=sample.ports,
            nics=sample.nics,
            lost=sample.lost,
            slow=sample.slow,
            hw=self.hw(),
        )


def _both(states: tuple, nodes: dict[str, HwNode], slow: bool) -> None:
    for name, node in nodes.items():
        ingest_both(states, [_wire(name, node.sample(1.0, slow, False), node.t + 0.01)])
    mine, theirs = snapshots_of_both(states, dict(nodes))
    _same(mine, theirs)
    metrics = (render_exposition(s, raw_port_counters=True) for s in (mine, theirs))
    assert next(metrics) == next(metrics)


def test_hw_counters_show_and_export_as_the_decoded_dicts_did() -> None:
    nodes = {name: HwNode(name) for name in ("a", "b")}
    states = started_states(dict(nodes))
    for k in range(14):
        if k == 6:  # names change on one port, gain one on another
            for node in nodes.values():
                node.names[0] = tuple(reversed(node.names[0]))
                node.names[1] = (*node.names[1], "req_cqe_error")
        if k == 9:  # a new session: ports keep their counters until its next slow tick
            for name, node in nodes.items():
                ingest_both(states, [_wire(name, node.hello(), node.t)])
        _both(states, nodes, slow=k % 4 == 1)
    shown = states[0].snapshot(max(n.t for n in nodes.values()) + 0.5).node("a")
    assert shown is not None
    counters = dict(shown.ports[1].counters)  # sysfs ones, then hw ones
    assert counters["out_of_buffer"] == BIG - nodes["a"].seq  # the last tick was slow
    assert counters["req_cqe_error"] == (1 << 60) + nodes["a"].seq * 7 + 4


def test_kept_counters_read_as_the_dict_and_share_their_names() -> None:
    first = {"out_of_buffer": BIG, "np_cnp_sent": 0, "tx_pkts": (1 << 53) + 1}
    second = {"out_of_buffer": 1, "np_cnp_sent": 2, "tx_pkts": 3}
    kept, other = kept_counters(first), kept_counters(second)
    assert isinstance(kept, HwCounters) and kept.names is other.names
    assert kept == first and dict(kept) == first
    assert list(kept.items()) == list(first.items())
    assert list(kept.values()) == list(first.values()) and list(kept) == list(first)
    assert kept["tx_pkts"] == (1 << 53) + 1 and type(kept["np_cnp_sent"]) is int
    assert kept.get("nope") is None and "np_cnp_sent" in kept and len(kept) == 3
    negative = kept_counters({"out_of_buffer": -(1 << 63), "tx_pkts": 5})
    assert list(negative.items()) == [("out_of_buffer", -(1 << 63)), ("tx_pkts", 5)]
    empty = kept_counters({})
    assert not empty and empty == {} and tuple(empty.items()) == ()
