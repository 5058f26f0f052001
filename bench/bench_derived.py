"""Benchmark: link events + inventory drift per tick, 1,000 nodes x (8 GPUs + 9 ports).

Every node's snapshot is new each tick (telemetry changed), links and inventory are
not: the common case. Ours (fleet.link_events + fleet.drift, as FleetRuntime.tick runs
them) against a baseline in the same run that walks every port and GPU of every node
each tick and compares field by field (the least any differ pays; it derives nothing).

Times are CPU seconds of this process (time.process_time). Run:
    .venv/bin/python bench/bench_derived.py [--nodes 1000] [--ticks 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet.drift import DriftTracker
from fleet.link_events import LinkEventDiffer
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot, PortSnapshot

GPUS, PORTS = 8, 9


def fleet(nodes: int, tick: int) -> FleetSnapshot:
    def gpu(n: int, i: int) -> GpuSnapshot:
        return GpuSnapshot(
            i, f"GPU-{n}-{i}", "H100", serial=f"S{n}-{i}", util_gpu=float((tick + i) % 100),
            nvlink_active=18, nvlink_total=18, verdict="ok",
        )  # fmt: skip

    def port(i: int) -> PortSnapshot:
        return PortSnapshot(
            f"mlx5_{i}/1", "ib", "ACTIVE", "LinkUp", 400.0, 400.0, 0,
            tx_bytes_per_s=1e9 + tick, verdict="ok",
        )  # fmt: skip

    return FleetSnapshot(
        float(tick),
        tuple(
            NodeSnapshot(
                f"node-{n:04d}",
                "streaming",
                state="up",
                gpus=tuple(gpu(n, i) for i in range(GPUS)),
                ports=tuple(port(i) for i in range(PORTS)),
            )
            for n in range(nodes)
        ),
    )


class NaiveDiffer:
    """The baseline: every port and GPU of every node compared field by field each tick."""

    def __init__(self) -> None:
        self.ports: dict[tuple[str, str], tuple[object, ...]] = {}
        self.gpus: dict[tuple[str, int], tuple[object, ...]] = {}
        self.changes = 0

    def apply(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        for node in snapshot.nodes:
            for p in node.ports:
                now = (p.state, p.phys_state, p.rate_gbps, p.expected_rate_gbps, p.link_downed)
                before = self.ports.get((node.name, p.name))
                self.ports[(node.name, p.name)] = now
                self.changes += before is not None and before != now
            for g in node.gpus:
                ident = (g.uuid, g.serial, g.verdict, g.nvlink_active)
                before = self.gpus.get((node.name, g.index))
                self.gpus[(node.name, g.index)] = ident
                self.changes += before is not None and before != ident
        return snapshot


def cpu_ms(run: Callable[[FleetSnapshot], FleetSnapshot], snaps: list[FleetSnapshot]) -> float:
    times = []
    for snap in snaps:
        start = time.process_time()
        run(snap)
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times[2:])  # the first ticks build the baselines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=20)
    args = parser.parse_args()
    snaps = [fleet(args.nodes, t) for t in range(args.ticks)]
    links, drift = LinkEventDiffer(), DriftTracker()
    ours = cpu_ms(lambda s: links.apply(drift.apply(s)), snaps)
    naive = cpu_ms(NaiveDiffer().apply, snaps)
    print(f"{args.nodes} nodes, every node changed, no link change: per tick (median CPU)")
    print(f"  link events + drift (ours): {ours:.1f} ms")
    print(f"  naive field-by-field walk:  {naive:.1f} ms  (ours costs {ours / naive:.2f}x)")


if __name__ == "__main__":
    main()
