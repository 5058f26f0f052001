"""Property: slow ticks whose NVLink counts do not move keep the object state's verdicts.

``fleet.state.nvlink.NodeLinks`` skips its arrays when a slow tick's link rows equal the
last ones and that tick left every rate known and 0 (the usual slow tick of a healthy
node). The oracle in test_gpu_ingest_oracle.py moves almost every tick's counts, so it
seldom takes that path; here most slow ticks repeat the last counts, with now and then a
count that moves, goes missing or resets, a tick at the same time, a new session or a
lost GPU between them. Every tick's snapshots must equal the reference's.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.agent.fields import NVLINK_FIELDS, PROTOCOL_VERSION
from collectors.protocol import Event
from collectors.updates import NodeUpdate
from fleet.model import FleetSnapshot
from tests.fleet.test_columnar_oracle import (
    _same,
    _wire,
    ingest_both,
    snapshots_of_both,
    started_states,
)
from tests.fleet.test_gpu_ingest_oracle import LinkNode

FLIT = NVLINK_FIELDS.index("crc_flit")


def _touch_a_link(draw: st.DrawFn, node: LinkNode) -> None:
    gpu = draw(st.integers(0, len(node.links) - 1))
    link = node.links[gpu][draw(st.integers(0, len(node.links[gpu]) - 1))]
    field = draw(st.sampled_from([FLIT, FLIT + 1]))
    kind = draw(st.sampled_from(["climb", "climb", "reset", "missing", "back"]))
    if kind == "climb":
        link[field] = int(link[field] or 0) + draw(st.integers(1, 40))
    elif kind == "reset":
        link[field] = 0
    elif kind == "missing":
        link[field] = None
    else:
        link[field] = 7


def _quiet_step(draw: st.DrawFn, nodes: dict[str, LinkNode]) -> list[NodeUpdate]:
    node = nodes[draw(st.sampled_from(sorted(nodes)))]
    action = draw(st.sampled_from(["slow"] * 12 + ["fast", "hello", "lost"]))
    if action == "hello":
        node.sent_full = False
        return [_wire(node.name, node.hello(), node.t)]
    if action == "lost":
        gpu = draw(st.integers(0, len(node.fast) - 1))
        event = Event(PROTOCOL_VERSION, node.t, "gpu_lost", gpu, f"GPU-{node.name}-{gpu}")
        return [_wire(node.name, event, node.t)]
    if draw(st.integers(0, 4)) == 0:
        _touch_a_link(draw, node)
    advance = draw(st.sampled_from([1.0, 1.0, 1.0, 10.0, 0.0]))
    sample = node.sample(advance, action == "slow", False)
    return [_wire(node.name, sample, node.t + 0.01)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_slow_ticks_with_unmoved_link_counts_give_the_object_states_snapshots(
    data: st.DataObject,
) -> None:
    nodes = {name: LinkNode(name) for name in ("a", "b")}
    states = started_states(dict(nodes))
    kept: list[tuple[FleetSnapshot, FleetSnapshot]] = []
    for _ in range(data.draw(st.integers(5, 30))):
        ingest_both(states, _quiet_step(data.draw, nodes))
        kept.append(snapshots_of_both(states, dict(nodes)))
    for mine, theirs in kept:
        _same(mine, theirs)
