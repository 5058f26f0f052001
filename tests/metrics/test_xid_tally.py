"""The XID tally finds the GPU of each XID by one lookup of the snapshot's nodes, however
many XIDs of however many nodes it carries."""

from __future__ import annotations

from dataclasses import replace

from bench.lib.metrics_fleets import fleet
from exporter.xids import XidTally
from fleet.model import EventRecord


def test_many_xids_of_many_nodes_each_find_their_gpu() -> None:
    base = fleet(300, gpus=4)
    names = [node.name for node in base.nodes]
    events = tuple(
        EventRecord(t=1.0, node=name, kind="xid", gpu=i % 4, code=13)
        for i, name in enumerate(names)
    )
    tally = XidTally()
    tally.observe(replace(base, taken_at=1.0, new_events=(*events, *events)))
    counts = dict(tally.counts())
    assert len(counts) == 300 and set(counts.values()) == {2}
    for node in base.nodes[:5]:
        gpu = node.gpus[names.index(node.name) % 4]
        assert counts[(node.name, str(gpu.index), gpu.uuid, gpu.name, "13")] == 2
