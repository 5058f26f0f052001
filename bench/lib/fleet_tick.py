"""The controller's own work per tick, in one process: the robust half of bench_fleet.

bench/bench_fleet.py measures the whole ``gpufleet serve`` process, which on a shared
2-core machine mostly measures the neighbours when they are busy. This runs the same
per-tick work without SSH and without waiting: N canned nodes' samples (the shape of
bench/lib/fleet_nodes.py) are decoded and ingested into a ``FleetRuntime``'s state, then
``FleetRuntime.tick`` snapshots, records history and calls the listeners; the /metrics
text is rendered every 15th tick. CPU is ``time.process_time`` (this process only), and
every garbage collection is timed (``gc.callbacks``). The runtime's GC policy is applied
as ``FleetRuntime.start`` applies it in the tree under test. Decoding (the transport's),
ingest, tick and scrape are timed apart; "state per tick" is ingest + tick.

``--one-by-one`` decodes and ingests each message in turn, as serve's line path does
(the default decodes a whole tick first); ``--young N`` sets the collector's young
threshold after the tree's policy, to see what another one would cost.

Run it against two trees, interleaved, for before/after on the same machine state:

    PYTHONPATH=OLD .venv/bin/python bench/bench_fleet_tick.py --nodes 1000 --ticks 30
    PYTHONPATH=.   .venv/bin/python bench/bench_fleet_tick.py --nodes 1000 --ticks 30
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # fleet_nodes, after PYTHONPATH's tree

from fleet_nodes import CannedNode

import gpufleet.runtime
from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from exporter.text import ExpositionRenderer
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime

T0 = 1.8e9
SCRAPE_EVERY = 15


class BenchRuntime(FleetRuntime):
    """The real runtime, told that every node was tried (no SSH fleet is started)."""

    @property
    def ready(self) -> bool:
        return True


class Pauses:
    """Every collection's generation and CPU time (thread CPU: a shared machine may
    deschedule the process mid-collection, which wall time would count)."""

    def __init__(self) -> None:
        self.started = 0.0
        self.seen: list[tuple[int, float]] = []

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.thread_time()
        else:
            self.seen.append((info["generation"], time.thread_time() - self.started))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=8)
    parser.add_argument("--one-by-one", action="store_true", help="decode, ingest, next")
    parser.add_argument("--young", type=int, help="the young generation's threshold")
    args = parser.parse_args()
    names = [f"node-{i:05d}" for i in range(1, args.nodes + 1)]
    runtime = BenchRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=None, clock=time.time
    )
    state = runtime._state  # the bench feeds the state as the SSH fleet would
    renderer = ExpositionRenderer()
    runtime.subscribe(lambda snapshot: None)  # a listener, as serve's logger
    nodes = [CannedNode(i, 8, 8, 1.0) for i in range(args.nodes)]
    total = args.warmup + args.ticks
    lines = [[node.sample(T0 + k) for node in nodes] for k in range(1, total + 1)]
    gc.freeze()  # what start() does first in every tree
    policy = getattr(gpufleet.runtime, "gc_thresholds", None)  # a tree's start-up policy
    young = getattr(gpufleet.runtime, "GC_YOUNG_THRESHOLD", None)
    if policy is not None:
        gc.set_threshold(*policy(gc.get_threshold()))
    elif young is not None:
        gc.set_threshold(young, *gc.get_threshold()[1:])
    if args.young is not None:
        gc.set_threshold(args.young, *gc.get_threshold()[1:])
    for name, node in zip(names, nodes, strict=True):
        state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    pauses = Pauses()
    costs, scrapes, decodes, ingests, ticks = [], [], [], [], []
    for k in range(1, total + 1):
        if k == args.warmup + 1:
            gc.callbacks.append(pauses)
        started = time.process_time()
        t = T0 + k
        if args.one_by_one:  # decode and ingest not timed apart: decodes are ingest's here
            for name, line in zip(names, lines[k - 1], strict=True):
                state.ingest(NodeMessage(name, decode_line(line), t + 0.01))
            decoded = ingested = time.process_time()
        else:
            # Decoding is the transport's (collectors.protocol): timed apart from the state.
            messages = [
                NodeMessage(name, decode_line(line), t + 0.01)
                for name, line in zip(names, lines[k - 1], strict=True)
            ]
            decoded = time.process_time()
            for message in messages:
                state.ingest(message)
            del messages  # the transport drops a message once ingested; holding them skews GC
            ingested = time.process_time()
        snapshot = runtime.tick(t + 0.5)
        ticked = time.process_time()
        if k % SCRAPE_EVERY == 0:
            renderer.render(snapshot)
            scrapes.append(time.process_time() - ticked)
        if k > args.warmup:
            costs.append(time.process_time() - started)
            decodes.append(decoded - started)
            ingests.append(ingested - decoded)
            ticks.append(ticked - ingested)
    gc.callbacks.remove(pauses)
    full = [s for g, s in pauses.seen if g == 2]
    print(f"nodes {args.nodes}, ticks measured {len(costs)} (after {args.warmup} warm-up)")
    median, mean = 1000 * statistics.median(costs), 1000 * statistics.mean(costs)
    print(f"CPU per tick (ingest, tick, 1/15 scrape): median {median:.0f} ms, mean {mean:.0f} ms")
    by_part = (("decode", decodes), ("ingest", ingests), ("tick", ticks))
    for name, average in (("median", statistics.median), ("mean", statistics.mean)):
        parts = ", ".join(f"{label} {1000 * average(values):.0f}" for label, values in by_part)
        print(f"{name} CPU per tick by part (ms): {parts}")
    state_costs = [i + t for i, t in zip(ingests, ticks, strict=True)]
    # Every node sends its slow rows on the same tick here (every 10th): the mean has them.
    print(f"state per tick (ingest + tick, no decode, no scrape): median "
          f"{1000 * statistics.median(state_costs):.0f} ms, mean "
          f"{1000 * statistics.mean(state_costs):.0f} ms")  # fmt: skip
    young = sum(1 for g, _ in pauses.seen if g == 0) / max(len(costs), 1)
    threshold = gc.get_threshold()[0]
    print(f"young collections per tick: {young:.1f} (each after ~{threshold} net new objects)")
    gc.collect()
    print(f"GC-tracked objects alive after the run: {len(gc.get_objects()):,}")
    print(f"CPU per 1,000 messages: {1000 * sum(costs) / (len(costs) * args.nodes):.3f} s")
    print(f"scrape render CPU: {[round(1000 * s) for s in scrapes]} ms")
    by_generation = ", ".join(
        f"gen {g}: {sum(1 for h, _ in pauses.seen if h == g)} up to "
        f"{1000 * max((s for h, s in pauses.seen if h == g), default=0):.0f} ms"
        for g in (0, 1, 2)
    )
    print(f"GC by generation (count, largest CPU): {by_generation}")
    gc_total = 1000 * sum(s for _, s in pauses.seen) / max(len(costs), 1)
    print(f"GC CPU per measured tick: {gc_total:.1f} ms")
    print(f"GC: {len(pauses.seen)} collections, {len(full)} full; largest pause (CPU) "
          f"{1000 * max((s for _, s in pauses.seen), default=0):.0f} ms, largest full "
          f"{1000 * max(full, default=0):.0f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
