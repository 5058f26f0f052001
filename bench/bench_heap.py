"""Resident memory of the controller's per-tick work: glibc's default heap vs ours.

The work of bench/lib/fleet_tick.py (N canned nodes decoded and ingested, ``FleetRuntime``
ticks with the history ring, /metrics rendered every 15th tick) run for ``--ticks`` in
two processes, one after the other, each with the runtime's GC policy and a full
collection every 30 ticks as ``HeapFreezer`` schedules it:

- ``default``: glibc's malloc as it comes (the baseline; the tree up to e80ac40);
- ``pinned``: :func:`fleet.native_heap.configure_malloc` at start and
  :func:`fleet.native_heap.release_free_heap` after each full collection, as
  ``FleetRuntime`` does now.

Printed: RSS and the glibc heap's resident size every 30 ticks, and the CPU of the
trims. Run: ``PYTHONPATH=. .venv/bin/python bench/bench_heap.py [--nodes 1000] [--ticks 120]``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.append(
    str(Path(__file__).resolve().parent / "lib")
)  # fleet_nodes, fleet_tick, memory_account

from fleet_nodes import CannedNode
from fleet_tick import BenchRuntime
from memory_account import components, mappings, runtime_roots

from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from exporter.text import ExpositionRenderer
from fleet.native_heap import configure_malloc, release_free_heap
from gpufleet.config import Config
from gpufleet.runtime import gc_thresholds

T0 = 1.8e9
SCRAPE_EVERY = 15
COLLECT_EVERY = 30


def run_variant(variant: str, nodes: int, ticks: int, account: bool) -> dict[str, object]:
    if variant == "pinned":
        configure_malloc()
    names = [f"node-{i:05d}" for i in range(1, nodes + 1)]
    runtime = BenchRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=None, clock=time.time
    )
    state, renderer = runtime._state, ExpositionRenderer()
    canned = [CannedNode(i, 8, 8, 1.0) for i in range(nodes)]
    gc.freeze()
    gc.set_threshold(*gc_thresholds(gc.get_threshold()))
    for name, node in zip(names, canned, strict=True):
        state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    marks: list[tuple[int, float, float]] = []
    trim_cpu = 0.0
    for k in range(1, ticks + 1):
        t = T0 + k
        for name, node in zip(names, canned, strict=True):
            state.ingest(NodeMessage(name, decode_line(node.sample(t)), t + 0.01))
        snapshot = runtime.tick(t + 0.5)
        if k % SCRAPE_EVERY == 0:
            renderer.render(snapshot)
        if k % COLLECT_EVERY == 0:
            gc.collect()
            if variant == "pinned":
                began = time.process_time()
                release_free_heap()
                trim_cpu = max(trim_cpu, time.process_time() - began)
            rss = mappings(os.getpid())
            marks.append((k, rss["total"], rss.get("heap (glibc brk)", 0.0)))
    out: dict[str, object] = {"marks": marks, "trim_cpu_ms_max": round(1000 * trim_cpu, 1)}
    if account:  # what each part of the runtime keeps (the bench's canned nodes last)
        roots = [*runtime_roots(runtime), ("the bench's canned nodes", canned)]
        out["parts"] = components(roots)
        out["mappings"] = mappings(os.getpid())
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=120)
    parser.add_argument("--variant", choices=("default", "pinned"), help=argparse.SUPPRESS)
    parser.add_argument("--account", action="store_true", help="break the pinned run down")
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.nodes, args.ticks, args.account)))
        return
    print(f"{args.nodes} nodes x 8 GPUs, {args.ticks} ticks, /metrics every {SCRAPE_EVERY}, "
          f"full collection every {COLLECT_EVERY} (RSS / glibc heap, MiB)")  # fmt: skip
    for variant in ("default", "pinned"):
        child = [sys.executable, __file__, "--variant", variant]
        child += ["--nodes", str(args.nodes), "--ticks", str(args.ticks)]
        child += ["--account"] if args.account and variant == "pinned" else []
        out = json.loads(subprocess.run(child, check=True, capture_output=True).stdout)
        marks = "  ".join(f"tick {k}: {rss:.0f} / {heap:.0f}" for k, rss, heap in out["marks"])
        trim = f"; largest trim {out['trim_cpu_ms_max']} ms CPU" if variant == "pinned" else ""
        print(f"{variant:8s} {marks}{trim}")
    if "parts" in out:
        print("pinned, at the end: resident by mapping (MiB):", out["mappings"])
        for name, (mib, objects) in out["parts"].items():
            print(f"  {mib:8.1f} MiB {objects:>9,} objects  {name}")


if __name__ == "__main__":
    main()
