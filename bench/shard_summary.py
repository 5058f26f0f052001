"""A shard's per-tick summary, in process: columns and briefs against the object path.

Each tick a shard encodes every node's summary for NATS. The state builds GPU and port
objects only when they are read, so the summary reads utilization from the tick's
columns and verdicts from the briefs; the baseline is the same ``summarize`` reading
every node's objects (built on that read, as a shard did before the columns were read).
Snapshots come from the real ``FleetRuntime`` fed canned agent lines (bench/fleet_nodes).

    PYTHONPATH=. .venv/bin/python bench/shard_summary.py --nodes 1000 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # fleet_nodes, after PYTHONPATH's tree

from fleet_nodes import CannedNode

from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from fleet.cluster.wire import summarize
from fleet.config import Config
from fleet.model import FleetSnapshot
from fleet.runtime import FleetRuntime

T0 = 1.8e9


def ticks(count: int, rounds: int) -> list[FleetSnapshot]:
    """``rounds`` consecutive snapshots of ``count`` canned nodes, every node changed."""
    names = [f"node-{i:05d}" for i in range(count)]
    runtime = FleetRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=None, clock=time.time
    )
    nodes = [CannedNode(i, 8, 8, 1.0) for i in range(count)]
    for name, node in zip(names, nodes, strict=True):
        runtime._state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    out = []
    for k in range(1, rounds + 1):
        for name, node in zip(names, nodes, strict=True):
            runtime._state.ingest(NodeMessage(name, decode_line(node.sample(T0 + k)), T0 + k))
        out.append(runtime.tick(T0 + k + 0.5))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ours, objects = [], []
    for snap in ticks(args.nodes, args.rounds):
        t = time.process_time()
        fast = summarize(1, 1, 1, 1.0, snap.nodes, snap.taken_at, snap.columns)
        ours.append(time.process_time() - t)
        t = time.process_time()  # the baseline reads (and so builds) every object
        slow = summarize(1, 1, 1, 1.0, snap.nodes, snap.taken_at)
        objects.append(time.process_time() - t)
        assert fast == slow, "the two paths must send the same bytes"
    a, b = statistics.median(ours) * 1000, statistics.median(objects) * 1000
    print(f"nodes {args.nodes}, rounds {args.rounds}, CPU per summary (median)")
    print(f"columns + briefs: {a:.1f} ms; objects built on read (baseline): {b:.1f} ms")
    print(f"ratio: {b / a:.1f}x")


if __name__ == "__main__":
    main()
