"""The bench's simulated nodes send what the controller's decoder takes, framed as promised."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from collectors.protocol import Event, Jobs, Sample, decode_line

_NODES = Path(__file__).resolve().parents[2] / "bench" / "lib" / "fleet_nodes.py"


def _fleet_nodes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_fleet_nodes", _NODES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fleet_nodes = _fleet_nodes()


def test_event_and_jobs_lines_pass_the_controllers_decoder() -> None:
    node = fleet_nodes.CannedNode(7, gpus=8, ports=8, interval=1.0)
    node.sample(1.0)
    event = decode_line(node.event(2.0, 0.99)[:-1])
    jobs = decode_line(node.jobs(3.0)[:-1])
    assert isinstance(event, Event) and event.kind == "xid" and event.gpu == 7
    assert event.code in (13, 31, 43)
    assert isinstance(jobs, Jobs) and [j.gpu for j in jobs.jobs] == list(range(8))
    assert {j.job for j in jobs.jobs} == {"107000"}


def test_split_framing_cuts_every_line_in_two_to_four_pieces_that_rejoin() -> None:
    traffic = fleet_nodes.Traffic("split", 0.0, 0.0, 1.0)
    node = fleet_nodes.CannedNode(3, gpus=8, ports=8, interval=1.0)
    counts = set()
    for t in range(40):
        line = node.sample(float(t))
        pieces = traffic.pieces(line)
        counts.add(len(pieces))
        assert b"".join(pieces) == line and all(pieces)
        assert isinstance(decode_line(b"".join(pieces)[:-1]), Sample)
    assert counts == {2, 3, 4}


def test_whole_framing_sends_a_line_as_one_piece() -> None:
    traffic = fleet_nodes.Traffic("openssh", 0.0, 0.0, 1.0)
    line = fleet_nodes.CannedNode(0, gpus=8, ports=8, interval=1.0).sample(0.0)
    assert traffic.pieces(line) == [line]


def test_events_come_at_the_asked_rate_and_jobs_on_their_period() -> None:
    # 3,600 XIDs per node-hour at 1 Hz is one per tick: every tick draws below it.
    every_tick = fleet_nodes.Traffic("openssh", 3600.0, 10.0, 1.0)
    nodes = fleet_nodes.Nodes(8, 8, 1.0, every_tick)
    node = fleet_nodes.CannedNode(0, gpus=8, ports=8, interval=1.0)
    kinds = [
        [decode_line(line[:-1]).__class__.__name__ for line in nodes.lines(node, float(t))]
        for t in range(20)
    ]
    assert all(k[:2] == ["Sample", "Event"] for k in kinds)
    assert sum(k.count("Jobs") for k in kinds) == 2  # one per 10 ticks
    quiet = fleet_nodes.Nodes(8, 8, 1.0, fleet_nodes.Traffic("openssh", 0.0, 0.0, 1.0))
    assert all(len(quiet.lines(node, float(t))) == 1 for t in range(20))


def test_a_canned_slow_row_holds_every_declared_slow_field() -> None:
    """The real agent sends every declared slow field; short rows sent every canned
    node's slow sample down the state's GPU-by-GPU path, which a fleet never takes."""
    from collectors.agent.fields import GPU_SLOW_FIELDS

    node = fleet_nodes.CannedNode(7, gpus=8, ports=8, interval=1.0)
    node.hello(1.8e9)
    node.seq = 10  # the next sample is the 11th: a slow tick
    sample = decode_line(node.sample(1.8e9 + 11))
    assert isinstance(sample, Sample) and sample.slow is not None
    rows = [row for row in sample.slow if row is not None]
    assert len(rows) == 8 and {len(row) for row in rows} == {len(GPU_SLOW_FIELDS)}
