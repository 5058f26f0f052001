"""What /metrics and history cost the controller per tick, in one process, without SSH.

N canned nodes (bench/lib/fleet_nodes.py: 8 H100s, 8 IB ports and a NIC each, every
fast value moving each tick, slow rows every tenth, application XIDs at
``--xids-per-node-hour``) are decoded and ingested into a real ``FleetRuntime`` that
records its history into a temporary data directory. Each tick is timed apart into:
the history's ``record`` (the tick's recorder call, on the loop's thread), the XID
tally's observation (subscribed to every snapshot, as ``serve``'s endpoint subscribes
it), and every ``--scrape-every``-th tick a scrape as the endpoint serves one
(``stream_parts`` gzip-compressed by ``exporter.gzip_body``, the same tally). CPU is
``time.thread_time`` of the main thread (the history's parquet writer thread is
reported apart, as the process's CPU beyond the main thread's). The first scrape builds
the label heads and is not counted.

Run it against two trees, interleaved, for before/after on the same machine state:

    PYTHONPATH=OLD .venv/bin/python bench/bench_export_tick.py --nodes 1000
    PYTHONPATH=.   .venv/bin/python bench/bench_export_tick.py --nodes 1000
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # after PYTHONPATH's tree

from fleet_nodes import CannedNode

from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from exporter.gzip_body import gzip_stream
from exporter.text import ExpositionRenderer
from exporter.xids import XidTally
from fleet.model import FleetSnapshot
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime

T0 = 1.8e9 - 1.8e9 % 60 + 30  # mid-minute: the run crosses minute boundaries


class BenchRuntime(FleetRuntime):
    """The real runtime, told that every node was tried (no SSH fleet is started)."""

    @property
    def ready(self) -> bool:
        return True


def timed(spent: list[float], call: Callable[..., Any]) -> Callable[..., Any]:
    """``call``, adding the main thread's CPU of each call to ``spent``."""

    def wrapper(*args: Any) -> Any:
        started = time.thread_time()
        try:
            return call(*args)
        finally:
            spent.append(time.thread_time() - started)

    return wrapper


def scrape(renderer: ExpositionRenderer, snapshot: FleetSnapshot | None) -> int:
    """One gzip scrape as the endpoint streams it; the compressed size."""
    stream = gzip_stream()
    size = sum(len(stream.compress(part)) for part in renderer.stream_parts(snapshot))
    return size + len(stream.flush())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--scrape-every", type=int, default=15)
    parser.add_argument("--xids-per-node-hour", type=float, default=1.0)
    args = parser.parse_args()
    names = [f"node-{i:05d}" for i in range(1, args.nodes + 1)]
    now = [T0]
    data_dir = Path(tempfile.mkdtemp(prefix="bench-export-"))
    runtime = BenchRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=data_dir,
        clock=lambda: now[0],
    )  # fmt: skip
    state = runtime._state  # fed as the SSH fleet would
    records: list[float] = []
    runtime.history.record = timed(records, runtime.history.record)  # type: ignore[method-assign]
    xids = XidTally()
    observes: list[float] = []
    runtime.subscribe(timed(observes, xids.observe))
    renderer = ExpositionRenderer(xids=xids, between_chunks=lambda: None)
    nodes = [CannedNode(i, 8, 8, 1.0) for i in range(args.nodes)]
    draws = random.Random(36)
    xid_per_tick = args.xids_per_node_hour / 3600
    for name, node in zip(names, nodes, strict=True):
        state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    gc.freeze()
    scrapes: list[float] = []
    ticks: list[float] = []
    size = 0
    process_started = thread_started = 0.0
    for k in range(1, args.warmup + args.ticks + 1):
        t = now[0] = T0 + k
        if k == args.warmup + 1:
            del records[:], observes[:]
            process_started, thread_started = time.process_time(), time.thread_time()
        for name, node in zip(names, nodes, strict=True):
            state.ingest(NodeMessage(name, decode_line(node.sample(t)), t + 0.01))
            draw = draws.random()
            if draw < xid_per_tick:
                line = node.event(t, draw / xid_per_tick)
                state.ingest(NodeMessage(name, decode_line(line), t + 0.01))
        started = time.thread_time()
        runtime.tick(t + 0.5)  # the snapshot is not held here: serve holds only the latest
        ticks.append(time.thread_time() - started)
        if k % args.scrape_every == 0:
            started = time.thread_time()
            size = scrape(renderer, runtime.latest())
            if k > args.warmup:
                scrapes.append(time.thread_time() - started)
    writer = (time.process_time() - process_started) - (time.thread_time() - thread_started)
    runtime.history.close()
    measured = ticks[args.warmup :]
    per_tick = 1000 / len(measured)
    print(f"nodes {args.nodes}, ticks {len(measured)} after {args.warmup}, scrapes {len(scrapes)}")
    print(f"tick CPU (main thread): median {1000 * statistics.median(measured):.1f} ms")
    record_ms = [1000 * r for r in records]
    print(f"history record CPU per tick: median {statistics.median(record_ms):.2f} ms, "
          f"mean {statistics.mean(record_ms):.2f} ms, max {max(record_ms):.1f} ms")  # fmt: skip
    observe_ms = [1000 * o for o in observes]
    print(f"XID tally observe CPU per tick: median {statistics.median(observe_ms):.3f} ms, "
          f"mean {statistics.mean(observe_ms):.3f} ms")  # fmt: skip
    scrape_ms = [round(1000 * s) for s in scrapes]
    print(f"scrape CPU (render + gzip, {size / 2**20:.2f} MiB gzip): {scrape_ms} ms, "
          f"median {statistics.median(scrape_ms):.0f}")  # fmt: skip
    amortised = statistics.mean(scrape_ms) / args.scrape_every
    history, tally = statistics.mean(record_ms), statistics.mean(observe_ms)
    print(f"per tick, amortised: scrape {amortised:.2f} ms, history {history:.2f} ms, "
          f"tally {tally:.3f} ms")  # fmt: skip
    print(f"history writer threads CPU per tick: {per_tick * writer:.2f} ms")


if __name__ == "__main__":
    main()
