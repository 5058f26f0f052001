"""A shard's per-tick summary, in process: columns and briefs against the object path.

Each tick a shard encodes every node's summary for NATS. The state builds GPU and port
objects only when they are read, so the summary reads utilization from the tick's
columns and verdicts from the briefs; the baseline is the same ``summarize`` reading
every node's objects (built on that read, as a shard did before the columns were read).
Snapshots come from the real ``FleetRuntime`` fed canned agent lines (bench/fleet_nodes).

    PYTHONPATH=. .venv/bin/python bench/bench_shard_summary.py --nodes 1000 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.append(
    str(Path(__file__).resolve().parent.parent)
)  # bench.lib.fleet_states from a checkout

from bench.lib.fleet_states import state_ticks
from cluster.wire import summarize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ours, objects = [], []
    for snap in state_ticks(args.nodes, args.rounds):
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
