"""What the inventory store (fleet/drift.py) costs while a fleet connects.

N nodes come up over the first ticks (as many a tick as ``--per-tick``), then the fleet
streams; each tick goes through ``DriftTracker.apply`` with a store on disk. Today's
tracker runs beside a named baseline loaded from git as its own module: fleet/drift.py
at commit a2dfd2b, which wrote the whole store, indented, on every tick a node came up.
The figure is the CPU time of the store's writes (``DriftTracker._save``, timed by a
wrapper; the rest of ``apply`` is the same code in both), best of ``--repeat``.

    PYTHONPATH=. .venv/bin/python bench/bench_drift_store.py --nodes 1000 --per-tick 100
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

from fleet import drift as ours
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot, PortSnapshot

BASELINE = "a2dfd2b"
T0 = 1.8e9


def _baseline() -> types.ModuleType:
    source = subprocess.run(
        ["git", "show", f"{BASELINE}:fleet/drift.py"], check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("drift_baseline")
    module.__dict__["__name__"] = "drift_baseline"
    sys.modules["drift_baseline"] = module  # dataclasses look their module up
    exec(compile(source, "drift_baseline.py", "exec"), module.__dict__)
    return module


def _node(i: int) -> NodeSnapshot:
    gpus = tuple(
        GpuSnapshot(
            g,
            f"GPU-{i:05d}{g:03d}-0000-4000-8000-000000000000",
            "H100",
            serial=f"1654321{i:05d}{g}",
            nvlink_active=18,
            nvlink_total=18,
            verdict="ok",
        )
        for g in range(8)
    )
    ports = tuple(PortSnapshot(f"mlx5_{p}/1", "ib", "ACTIVE", verdict="ok") for p in range(8))
    return NodeSnapshot(
        f"node-{i:05d}",
        "streaming",
        state="up",
        gpus=gpus,
        ports=ports,
        state_since=T0,
        boot_id=f"{i:08x}-0000-4000-8000-000000000000",
        machine_id=f"{i:032x}",
    )


def _run(module: Any, snapshots: list[FleetSnapshot]) -> tuple[float, int]:
    """CPU seconds spent writing the store, and the number of writes."""
    spent, writes = 0.0, 0
    save = module.DriftTracker._save

    def timed(self: Any, *args: Any) -> None:
        nonlocal spent, writes
        started = time.process_time()
        save(self, *args)
        spent += time.process_time() - started
        writes += 1

    with tempfile.TemporaryDirectory() as tmp:
        tracker = module.DriftTracker(Path(tmp) / "inventory.json")
        module.DriftTracker._save = timed
        try:
            for snapshot in snapshots:
                tracker.apply(snapshot)
            getattr(tracker, "flush", lambda: None)()  # today's stop writes what is left
        finally:
            module.DriftTracker._save = save
    return spent, writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--per-tick", type=int, default=100)
    parser.add_argument("--ticks", type=int, default=20, help="ticks in all, connecting and after")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    nodes = [_node(i) for i in range(args.nodes)]
    # The state keeps a node's snapshot object while it does not change: the same here.
    snapshots = [
        FleetSnapshot(T0 + k, tuple(nodes[: args.per_tick * (k + 1)])) for k in range(args.ticks)
    ]
    baseline = _baseline()
    best = {"ours": (float("inf"), 0), BASELINE: (float("inf"), 0)}
    for _ in range(args.repeat):  # alternated, so both see the same machine state
        best["ours"] = min(best["ours"], _run(ours, snapshots))
        best[BASELINE] = min(best[BASELINE], _run(baseline, snapshots))
    print(f"{args.nodes} nodes, {args.per_tick} coming up a tick, {args.ticks} ticks; store "
          f"writes' CPU, best of {args.repeat}")  # fmt: skip
    for name, (seconds, writes) in best.items():
        print(f"  {name:8s} {1000 * seconds:8.1f} ms in {writes} writes")
    print(f"  baseline / ours: {best[BASELINE][0] / best['ours'][0]:.1f}x")


if __name__ == "__main__":
    main()
