"""Property: the GPU side of ingest as array writes keeps the object state's verdicts.

The columnar oracle (test_columnar_oracle.py) never sends per-link NVLink counters,
field errors, a ``gpu_lost`` event, a short GPU row or fewer port rows than ports; these
are what the array paths of ``fleet.state.gpu_ingest`` and ``fleet.state.nvlink`` (and
the node-held port rows) decide differently from the one-at-a-time code they replaced
(kept in ``tests/fleet/reference``). Random sequences of them go to both states; every
tick's snapshots must be equal.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.agent.fields import GPU_FIELDS, NVLINK_FIELDS, PROTOCOL_VERSION
from collectors.protocol import Event, Sample, Value
from collectors.updates import NodeUpdate
from fleet.model import FleetSnapshot
from tests.fleet.test_columnar_oracle import (
    NODES,
    Node,
    _same,
    _wire,
    ingest_both,
    snapshots_of_both,
    started_states,
)

LINKS = 3
CLOCK = GPU_FIELDS.index("clock_reasons")


class LinkNode(Node):
    """A made-up node that also sends per-link NVLink counters and field errors."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.links: list[list[list[Value]]] = [
            [[1, 0, 0, 0, 0] for _ in range(LINKS)] for _ in self.fast
        ]
        self.errs: dict[str, dict[str, str]] = {}
        self.short_gpu: int | None = None
        self.fewer_ports = False  # the last port sends no row: it keeps its last one
        # Only after every port sent a row in this session: the object state kept a
        # port's snapshot while the port got no row, expected rate included, where the
        # columnar state shows the node's best rate now (a known difference).
        self.sent_full = False

    def sample(self, advance: float, slow: bool, short: bool) -> Sample:
        base = super().sample(advance, slow, short)
        fewer = self.fewer_ports and self.sent_full
        self.sent_full = True
        gpus = list(base.gpus)
        if self.short_gpu is not None and gpus[self.short_gpu] is not None:
            gpus[self.short_gpu] = gpus[self.short_gpu][:5]  # type: ignore[index]
        links: list[list[list[Value]] | None] | None = None
        if slow:
            links = [[list(link) for link in gpu] for gpu in self.links]
        return Sample(
            v=base.v, t=base.t, seq=base.seq, gpus=gpus,
            ports=base.ports[:-1] if fewer else base.ports, nics=base.nics,
            lost=base.lost, errs=dict(self.errs), slow=base.slow, links=links,
        )  # fmt: skip


def _draw_link_changes(draw: st.DrawFn, node: LinkNode) -> None:
    for gpu in node.links:
        for link in gpu:
            if draw(st.integers(0, 3)):
                continue
            field = draw(st.sampled_from([NVLINK_FIELDS.index("crc_flit"), 4]))
            kind = draw(st.sampled_from(["climb", "climb", "reset", "missing", "fraction"]))
            if kind == "climb":
                link[field] = int(link[field] or 0) + draw(st.integers(0, 50))
            elif kind == "reset":
                link[field] = draw(st.integers(0, 2))
            elif kind == "fraction":
                link[field] = draw(st.integers(0, 90)) + 0.5
            else:
                link[field] = None
    if draw(st.integers(0, 9)) == 0:  # a GPU that sends fewer or more links, or none
        at = draw(st.integers(0, len(node.links) - 1))
        node.links[at] = [[1, 0, 0, 0, 0] for _ in range(draw(st.integers(0, LINKS + 1)))]


def _draw_gpu_changes(draw: st.DrawFn, node: LinkNode) -> None:
    for i in range(len(node.fast)):
        if draw(st.integers(0, 4)) == 0:  # clock reasons move alone: the settled path
            row = list(node.fast[i])
            row[CLOCK] = draw(st.sampled_from([0, 0x8, 0x40, None]))
            node.fast[i] = row
    if draw(st.integers(0, 5)) == 0:
        gpu = draw(st.integers(0, len(node.fast) - 1))
        node.errs = {str(gpu): {"power_w": "NVMLError_NotSupported"}}
    elif draw(st.booleans()):
        node.errs = {}
    node.short_gpu = draw(st.sampled_from([None] * 6 + list(range(len(node.fast)))))
    node.fewer_ports = draw(st.integers(0, 5)) == 0


def _step(draw: st.DrawFn, nodes: dict[str, LinkNode]) -> list[NodeUpdate]:
    node = nodes[draw(st.sampled_from(sorted(nodes)))]
    action = draw(st.sampled_from(["sample"] * 8 + ["hello", "lost", "back"]))
    if action == "hello":
        node.sent_full = False
        return [_wire(node.name, node.hello(), node.t)]
    if action == "lost":  # the agent says between samples that a GPU fell off
        gpu = draw(st.integers(0, len(node.fast) - 1))
        event = Event(PROTOCOL_VERSION, node.t, "gpu_lost", gpu, f"GPU-{node.name}-{gpu}")
        if draw(st.booleans()):  # else the GPU answers again in the next sample
            node.lost.add(gpu)
        return [_wire(node.name, event, node.t)]
    if action == "back":
        node.lost.clear()
    _draw_gpu_changes(draw, node)
    _draw_link_changes(draw, node)
    advance = draw(st.sampled_from([1.0, 1.0, 0.5, 3.0, 0.0]))
    sample = node.sample(advance, draw(st.integers(0, 2)) > 0, False)
    return [_wire(node.name, sample, node.t + 0.01)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_gpu_rows_links_and_errors_give_the_object_states_snapshots(
    data: st.DataObject,
) -> None:
    nodes = {name: LinkNode(name) for name in NODES}
    states = started_states(dict(nodes))
    kept: list[tuple[FleetSnapshot, FleetSnapshot]] = []
    for _ in range(data.draw(st.integers(3, 25))):
        for _ in range(data.draw(st.sampled_from([1, 1, 1, 2]))):
            ingest_both(states, _step(data.draw, nodes))
        kept.append(snapshots_of_both(states, dict(nodes)))
    for mine, theirs in kept:  # read late: later ingests must not have reached them
        _same(mine, theirs)
