"""The attached viewer's tick, in process: ShardBoard against the board before it.

Each shard sends every node every tick; how many of them changed decides what the
viewer must convert. The baseline is the previous board's ``snapshot`` (every node
converted to a NodeSnapshot on every tick, utilization summed over every GPU),
rebuilt here from the same public parts, fed the same decoded summaries.

    PYTHONPATH=. .venv/bin/python bench/bench_scale_viewer.py --nodes 12500 --shards 13
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
from dataclasses import replace

from cluster.board import ShardBoard, fleet_utilization
from cluster.wire import ShardSummary, decode_summary, node_from_summary, summarize
from fleet.model import FleetSnapshot, NodeSnapshot, UtilizationSummary
from testkit.synthetic_history import snapshot as synthetic


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def naive_snapshot(board: ShardBoard, now: float) -> FleetSnapshot:
    """``ShardBoard.snapshot`` as it was before (no detail, no silence: not exercised)."""
    chosen: dict[str, tuple[float, NodeSnapshot]] = {}
    for _, seen in sorted(board.shards.items()):
        for summary in seen.summary.nodes:
            taken = seen.summary.taken_at
            if summary.name in chosen and chosen[summary.name][0] >= taken:
                continue
            chosen[summary.name] = (taken, node_from_summary(summary))
    nodes = tuple(node for _, node in sorted(chosen.values(), key=lambda v: v[1].name))
    return FleetSnapshot(
        taken_at=now, nodes=nodes, utilization=UtilizationSummary(now=fleet_utilization(nodes))
    )


def ticks_of_summaries(
    nodes: int, shards: int, ticks: int, changed: float, seed: int = 1
) -> list[list[ShardSummary]]:
    """Decoded summaries per tick: every node seen anew (as streaming nodes are), and
    ``changed`` of them with a new utilization on every GPU."""
    rng = random.Random(seed)
    fleet = list(synthetic(1_800_000_000.0, nodes, 8).nodes)
    out = []
    for tick in range(ticks):
        for i in rng.sample(range(nodes), round(changed * nodes)) if tick else ():
            gpus = tuple(replace(g, util_gpu=float(rng.randrange(101))) for g in fleet[i].gpus)
            fleet[i] = replace(fleet[i], gpus=gpus)
        t = 1_800_000_000.0 + tick
        fleet = [replace(n, last_seen=t) for n in fleet]
        per_shard = [fleet[k::shards] for k in range(shards)]
        out.append(
            [
                decode_summary(part)
                for k, mine in enumerate(per_shard, start=1)
                for part in summarize(k, shards, tick + 1, 1.0, mine, t)
            ]
        )
    return out


def run(nodes: int, shards: int, ticks: int, changed: float) -> tuple[float, float]:
    """CPU ms per viewer tick: (baseline, ours), over the same summaries, interleaved
    tick by tick so a change in the machine's load hits both alike."""
    feed = ticks_of_summaries(nodes, shards, ticks, changed)
    boards = ShardBoard(), ShardBoard()
    assemblers = naive_snapshot, ShardBoard.snapshot
    times: tuple[list[float], list[float]] = ([], [])
    for tick, summaries in enumerate(feed):
        now = 1_800_000_000.0 + tick + 0.5
        for which in (0, 1) if tick % 2 else (1, 0):
            for summary in summaries:
                boards[which].apply_summary(summary, now)
            t0 = cpu_s()
            assemblers[which](boards[which], now)
            times[which].append(cpu_s() - t0)
    # The first tick converts every node in both.
    return 1000 * statistics.median(times[0][1:]), 1000 * statistics.median(times[1][1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=12_500)
    parser.add_argument("--shards", type=int, default=13)
    parser.add_argument("--ticks", type=int, default=20)
    args = parser.parse_args()
    print(f"# viewer tick, {args.nodes} nodes in {args.shards} shards, {args.ticks} ticks, CPU ms")
    print("| nodes changed per tick | previous board (every node) | ShardBoard | ratio |")
    print("|---|---|---|---|")
    for changed in (0.0, 0.01, 0.1, 1.0):
        naive, ours = run(args.nodes, args.shards, args.ticks, changed)
        print(f"| {100 * changed:g} % | {naive:.1f} ms | {ours:.1f} ms | {naive / ours:.1f}× |")


if __name__ == "__main__":
    main()
