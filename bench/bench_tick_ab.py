"""Benchmark: FleetState ingest, port flush and snapshot at 1,000 nodes, tree against tree.

``bench/bench_fleet_tick.py`` times the whole runtime tick; on a shared 2-core machine its
medians move by a third between runs. This times only the state's three phases per
tick (ingest of every node's sample, ``PortColumns.flush``, the rest of ``snapshot``),
CPU time of this process, and reports the minimum and median over the ticks without
slow rows; ticks with slow, NVLink and hw rows (every 10th) are timed apart: whole, their
ingest and their snapshot (where a node is judged again; the first two slow ticks judge
every node, rates being known from the second, so a warmup of 12 or more measures the
steady ones), and so are the first samples (each node starts its session; flush and
snapshot as one). With
``--against TREE`` it runs itself alternately under ``PYTHONPATH=TREE`` (the baseline,
e.g. an export of main) and under this tree, several times, and prints the ratios of
the best figures, so both see the same machine state:

    git archive main | tar -x -C /tmp/main-tree
    PYTHONPATH=. .venv/bin/python bench/bench_tick_ab.py --against /tmp/main-tree
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = 1.8e9
PHASES = ("ingest", "flush", "snapshot")
OTHERS = ("slow tick", "slow ingest", "slow snapshot", "first ingest", "first snapshot")
JUDGED = ("judged fast", "judged slow")
SLOW_EVERY = 10  # fleet_nodes.CannedNode sends slow and NVLink rows on every 10th sample


def measure(nodes: int, ticks: int, warmup: int) -> dict[str, list[float]]:
    """CPU seconds per phase of each measured tick, in the tree on sys.path."""
    sys.path.append(str(HERE / "lib"))  # fleet_nodes, after PYTHONPATH's tree
    from fleet_nodes import CannedNode

    from collectors.protocol import decode_line
    from collectors.updates import NodeMessage
    from fleet.settings.health_section import HealthSection
    from fleet.state import FleetState, NodeSpec

    names = [f"node-{i:05d}" for i in range(1, nodes + 1)]
    state = FleetState([NodeSpec(n) for n in names], HealthSection())
    canned = [CannedNode(i, 8, 8, 1.0) for i in range(nodes)]
    for name, node in zip(names, canned, strict=True):
        state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    times: dict[str, list[float]] = {phase: [] for phase in (*PHASES, *OTHERS, *JUDGED)}
    for k in range(1, warmup + ticks + 1):
        t = T0 + k
        messages = [
            NodeMessage(name, decode_line(node.sample(t)), t + 0.01)
            for name, node in zip(names, canned, strict=True)
        ]
        started = time.process_time()
        for message in messages:
            state.ingest(message)
        ingested = time.process_time()
        state._ports.flush()  # the phase the snapshot would start with
        flushed = time.process_time()
        state.snapshot(t + 0.5)
        done = time.process_time()
        if k == 1:  # every node's first sample: each starts its session
            times["first ingest"].append(ingested - started)
            times["first snapshot"].append(done - ingested)
        if k <= warmup:
            continue
        # Nodes judged again at this tick (the rest restamped); -1: a tree that judges all.
        judged = float(getattr(state, "judged", -1))
        if k % SLOW_EVERY == 1:  # the state's whole cost of a tick with slow rows
            times["slow tick"].append(done - started)
            times["slow ingest"].append(ingested - started)
            times["slow snapshot"].append(done - flushed)  # where its nodes are judged
            times["judged slow"].append(judged)
        else:
            times["judged fast"].append(judged)
            times["ingest"].append(ingested - started)
            times["flush"].append(flushed - ingested)
            times["snapshot"].append(done - flushed)
    return times


def _run(tree: str, args: argparse.Namespace) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": tree}
    command = [sys.executable, __file__, "--json", "--nodes", str(args.nodes)]
    command += ["--ticks", str(args.ticks), "--warmup", str(args.warmup)]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _line(label: str, times: dict[str, list[float]]) -> str:
    parts = [
        f"{p} {1000 * min(times[p]):.1f}/{1000 * statistics.median(times[p]):.1f}" for p in PHASES
    ]
    slow = f"slow tick (all phases) median {1000 * statistics.median(times['slow tick']):.1f}"
    judged = "/".join(f"{statistics.median(times[j]):.0f}" for j in JUDGED)
    judged = f"nodes judged (median) fast/slow {judged}"
    return f"{label:9s} ms min/median: " + ", ".join(parts) + f"; {slow}; {judged}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="alternations with --against")
    parser.add_argument("--against", help="the baseline tree (a checkout or export of main)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.nodes, args.ticks, args.warmup)))
        return
    if not args.against:
        print(_line("this tree", measure(args.nodes, args.ticks, args.warmup)))
        return
    ours = os.environ.get("PYTHONPATH", ".")
    best: dict[str, dict[str, list[float]]] = {"baseline": {}, "ours": {}}
    for _ in range(args.rounds):
        for label, tree in (("baseline", args.against), ("ours", ours)):
            times = _run(tree, args)
            print(_line(label, times), f"(load {os.getloadavg()[0]:.1f})", flush=True)
            for phase in (*PHASES, *OTHERS):
                best[label].setdefault(phase, []).extend(times[phase])
    print(f"nodes {args.nodes}; over all rounds, best tick per phase (baseline / ours):")
    for phase in (*PHASES, "state", *OTHERS):
        if phase == "state":
            base = sum(min(best["baseline"][p]) for p in PHASES)
            mine = sum(min(best["ours"][p]) for p in PHASES)
        else:
            base, mine = min(best["baseline"][phase]), min(best["ours"][phase])
        print(f"  {phase:9s} {1000 * base:6.1f} ms / {1000 * mine:6.1f} ms = {base / mine:.2f}x")


if __name__ == "__main__":
    main()
