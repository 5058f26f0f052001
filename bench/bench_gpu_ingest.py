"""Benchmark: the GPU side of ingest at 1,000 nodes x 8 GPUs (18 NVLinks each).

Ours: ``fleet.state.gpu_ingest.take_gpus`` (one array write per node's fast rows, GPUs
visited only where a fact moved, NVLink counters as one array per node). Baseline in
the same run: the one-GPU-at-a-time loop it replaced (``GpuTrack.apply_fast`` /
``apply_slow`` / ``apply_links`` of the object state, bench/lib/reference_gpu.py, a
copy of tests/fleet/reference's, plus the same ``GpuArena.write``), fed the same decoded
samples.

Three kinds of tick: fast (every node, no slow rows), slow (every node's slow and link
rows, no CRC error anywhere) and slow with CRC counts moving on every link (the worst
case for ours). CPU time (time.process_time).

    PYTHONPATH=. .venv/bin/python bench/bench_gpu_ingest.py [--nodes 1000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # fleet_nodes, after PYTHONPATH

from fleet_nodes import NVLINKS, CannedNode

from bench.lib.reference_gpu import GpuTrack as ReferenceGpu
from collectors.protocol import Sample, decode_line
from fleet.settings.health_section import HealthSection
from fleet.state.columns import FastPlan, GpuArena
from fleet.state.gpu_ingest import take_gpus
from fleet.state.layout import Layout
from fleet.state.node import NodeSpec, NodeTrack
from fleet.state.port_columns import PortColumns

T0 = 1.8e9


class Baseline:
    """One node's GPUs as the state ingested them before: a Python call per GPU."""

    def __init__(self, node: NodeTrack, arena: GpuArena) -> None:
        assert node.hello is not None and node.layout is not None
        self.gpus = [ReferenceGpu(info) for info in node.hello.gpus]
        self.layout, self.arena, self.start = node.layout, arena, node.gpu_start
        self.plan = FastPlan(node.layout.gpu)

    def take(self, sample: Sample, received: float) -> None:
        layout = self.layout
        rows, lost, clock = sample.gpus, sample.lost, layout.gpu["clock_reasons"]
        width = len(layout.gpu)
        for i, track in enumerate(self.gpus):
            row = rows[i] if i < len(rows) else None
            if row is not None:
                row = tuple(row) if len(row) >= width else tuple(layout.gpu.pad(row))
            track.apply_fast(row, row is None or i in lost, clock, received)
        if sample.slow is not None:
            for track, srow in zip(self.gpus, sample.slow, strict=False):
                track.apply_slow(srow, sample.t, received, layout.slow)
        if sample.links is not None:
            for track, links in zip(self.gpus, sample.links, strict=False):
                track.apply_links(links, sample.t)
        self.arena.write(self.start, len(self.gpus), rows, self.plan)


def _samples(canned: list[CannedNode], tick: int, crc_moves: bool) -> list[Sample]:
    out = []
    for node in canned:
        node.seq = tick - 1  # sample() numbers it `tick`; slow rows when tick % 10 == 1
        sample = decode_line(node.sample(T0 + tick))
        assert isinstance(sample, Sample)
        if crc_moves and sample.links is not None:
            links = [[[1, 0, 0, tick * 3 + k, 0] for k in range(NVLINKS)] for _ in sample.gpus]
            sample = Sample(sample.v, sample.t, sample.seq, sample.gpus, sample.ports,
                            sample.nics, slow=sample.slow, links=links)  # type: ignore[arg-type]  # fmt: skip
        out.append(sample)
    return out


def _time(take: Callable[[Sample, int], None], samples: list[Sample]) -> float:
    start = time.process_time()
    for i, sample in enumerate(samples):
        take(sample, i)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    health = HealthSection()
    arena, ports = GpuArena(8 * args.nodes), PortColumns(health, 16 * args.nodes)
    canned = [CannedNode(k, 8, 8, 1.0) for k in range(args.nodes)]
    nodes = []
    for k, node in enumerate(canned):
        track = NodeTrack(NodeSpec(f"node-{k}"), health, 50, arena, ports)
        hello = decode_line(node.hello(T0))
        track.on_hello(hello, T0)  # type: ignore[arg-type]
        track.on_sample(_samples([node], 1, False)[0], T0 + 1)  # the session starts
        nodes.append(track)
    baselines = [Baseline(node, arena) for node in nodes]
    kinds = {"fast": (2, False), "slow": (11, False), "slow, CRC moving": (11, True)}
    print(f"{args.nodes} nodes x 8 GPUs x {NVLINKS} NVLinks, CPU ms per tick (all nodes)")
    for label, (tick, moving) in kinds.items():
        ours_ms, base_ms = [], []
        for r in range(args.rounds):
            samples = _samples(canned, tick + 10 * r, moving)
            received = T0 + tick + 10 * r

            def ours(sample: Sample, i: int, at: float = received) -> None:
                node = nodes[i]
                assert isinstance(node.layout, Layout)
                take_gpus(node, sample, node.layout, at)

            def base(sample: Sample, i: int, at: float = received) -> None:
                baselines[i].take(sample, at)

            ours_ms.append(1000 * _time(ours, samples))
            base_ms.append(1000 * _time(base, samples))
        mine, theirs = statistics.median(ours_ms), statistics.median(base_ms)
        print(f"{label}: take_gpus {mine:.1f} ms, per-GPU loop (before) {theirs:.1f} ms, "
              f"{theirs / mine:.1f}x (median of {args.rounds})")  # fmt: skip


if __name__ == "__main__":
    main()
