"""FleetState takes the agents' ``jobs`` lines: the jobs per GPU on the fleet and node
snapshots, each ended interval handed over once, and a node with jobs on the bus."""

from __future__ import annotations

import json

from collectors.protocol import decode_line
from collectors.updates import NodeMessage
from tests.fleet.feed import NodeFeed, started_fleet


def _jobs(feed: NodeFeed, *entries: tuple[int, str]) -> NodeMessage:
    """A ``jobs`` line of ``feed``'s node: (gpu, job) entries, step 0, user alice."""
    body = {
        "type": "jobs", "v": 1, "t": feed.t, "schema": 1,
        "jobs": [
            {"gpu": g, "uuid": feed.uuids[g], "scheduler": "slurm", "job": j, "step": "0",
             "user": "alice"}
            for g, j in entries
        ],
    }  # fmt: skip
    return NodeMessage(feed.name, decode_line(json.dumps(body).encode()), feed.t)


def test_jobs_reach_the_snapshots_and_an_ended_job_is_handed_over_once() -> None:
    feed, other = NodeFeed("gpu-001", gpus=2), NodeFeed("gpu-002", gpus=2)
    state = started_fleet(feed, other)
    assert state.snapshot(feed.t).jobs == ()
    state.ingest(_jobs(feed, (0, "41"), (1, "42")))
    snap = state.snapshot(feed.t + 0.5)
    assert [(i.node, i.gpu, i.job) for i in snap.jobs] == [
        ("gpu-001", 0, "41"),
        ("gpu-001", 1, "42"),
    ]
    node, quiet = snap.nodes
    assert [i.job for i in node.jobs] == ["41", "42"] and quiet.jobs == ()
    state.ingest(feed.sample())  # a new sample keeps the node's jobs
    again = state.snapshot(feed.t + 0.5).node("gpu-001")
    assert again is not None and [i.job for i in again.jobs] == ["41", "42"]
    feed.t += 5
    state.ingest(_jobs(feed, (0, "41")))
    snap = state.snapshot(feed.t + 0.5)
    assert [(i.gpu, i.job, i.end) for i in snap.ended_jobs] == [(1, "42", feed.t)]
    assert [i.job for i in snap.nodes[0].jobs] == ["41"]
    assert state.snapshot(feed.t + 1).ended_jobs == ()


def test_a_node_with_jobs_crosses_the_bus_with_them() -> None:
    from cluster.wire import decode_node, encode

    feed = NodeFeed("gpu-001", gpus=2)
    state = started_fleet(feed)
    state.ingest(_jobs(feed, (1, "41")))
    node = state.snapshot(feed.t + 0.5).nodes[0]
    decoded = decode_node(encode(node.detached()))
    assert decoded.jobs == node.jobs and decoded.jobs[0].job == "41"
