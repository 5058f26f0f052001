"""Scrape cost of the metrics endpoint for a large fleet, against prometheus_client baselines.

Run: ``.venv/bin/python bench/bench_metrics.py [--nodes 1000] [--gpus 8] [--ports 0]``

Measured in the same run on the same snapshots:

* ``fast``: :class:`exporter.text.ExpositionRenderer` (what /metrics serves), in
  steady state (label prefixes cached, every ``NodeSnapshot`` new, as at 1 Hz), with
  every node unchanged (whole node text reused), and cold (first scrape);
* ``collector``: :class:`exporter.collector.FleetCollector` + ``generate_latest``;
* ``baseline``: the same series as labelled ``Gauge`` children + ``generate_latest``
  (the usual prometheus_client way), plus the cost of setting every value per tick.

Memory is measured with tracemalloc in separate passes (it slows the timed code).

``--before REV`` instead compares this tree's renderer with the one at git revision
``REV`` on realistic snapshots (bench/lib/metrics_probe.py: 8 GPUs, 8 IB ports, 1 NIC per
node through the real runtime, ~550 series per node), each in its own process,
interleaved ``--rounds`` times; it prints CPU per render (fastest and median of the
steady renders, and the first, cold one) and the ratio, the memory a scrape peaks at
and the renderer holds, and the peak while the tree's endpoint serves one scrape over
loopback, plain and gzipped (a scrape is what the endpoint serves: the parts where the
tree has ``render_parts``, else the joined body), and while the tree's endpoint serves
a scrape the longest the event loop waited, how often a 1 ms ticker woke, and the RSS
rise (VmHWM over VmRSS before).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from bench.lib.metrics_fleets import fleet
from exporter.collector import FleetCollector
from exporter.text import ExpositionRenderer
from fleet.model import FleetSnapshot

MiB = 1024 * 1024


def variants(base: FleetSnapshot, count: int) -> list[FleetSnapshot]:
    """``count`` snapshots of the same GPUs with new values and new node objects."""
    out = []
    for k in range(count):
        nodes = tuple(
            replace(
                node,
                gpus=tuple(
                    replace(g, util_gpu=float((g.index * 7 + k * 13) % 101), power_w=100.0 + k)
                    for g in node.gpus
                ),
            )
            for node in base.nodes
        )
        out.append(replace(base, taken_at=base.taken_at + k, nodes=nodes))
    return out


class Timings:
    """Rows of (fastest, median) seconds; fastest is the least disturbed run on a shared CPU."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[float, float]] = {}

    def run(self, name: str, fn: Callable[[], object], repeat: int) -> object:
        """Time ``repeat`` calls of ``fn`` as row ``name``; returns the last result."""
        times, result = [], None
        for _ in range(repeat):
            gc.collect()
            started = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - started)
        self.rows[name] = (min(times), statistics.median(times))
        return result

    def best(self, name: str) -> float:
        return self.rows[name][0]

    def print(self) -> None:
        print(f"{'':40s} {'fastest':>9s} {'median':>9s}")
        for name, (fastest, median) in self.rows.items():
            print(f"{name:40s} {fastest * 1000:9.1f} {median * 1000:9.1f} ms")


def gauge_registry(snapshot: FleetSnapshot) -> tuple[CollectorRegistry, list[tuple[Gauge, float]]]:
    """The collector's series as labelled Gauge children, and (child, value) per series."""
    registry = CollectorRegistry()
    children = []
    for family in FleetCollector(lambda: snapshot).collect():
        if not family.samples:
            continue
        labelnames = list(family.samples[0].labels)
        gauge = Gauge(family.name, family.documentation, labelnames, registry=registry)
        for sample in family.samples:
            child = gauge.labels(*sample.labels.values()) if labelnames else gauge
            child.set(sample.value)
            children.append((child, sample.value))
    return registry, children


def set_all(children: list[tuple[Gauge, float]]) -> None:
    """What a Gauge-based exporter does every tick: set each series' value."""
    for child, value in children:
        child.set(value)


def peak_mib(fn: Callable[[], object]) -> tuple[float, float, object]:
    """(peak MiB during ``fn``, MiB still held after it, its result) under tracemalloc."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = fn()
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (peak - before) / MiB, (held - before) / MiB, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--ports", type=int, default=0, help="IB ports per node")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", metavar="REV", help="compare with the renderer at REV")
    parser.add_argument("--rounds", type=int, default=3, help="with --before: interleaved runs")
    args = parser.parse_args()
    if args.before:
        compare_with(args.before, args.nodes, args.rounds, args.repeat)
        return
    load = os.getloadavg()
    base = fleet(args.nodes, args.gpus, args.ports)
    snaps = variants(base, args.repeat + 1)
    t = Timings()
    cold = ExpositionRenderer()
    body = t.run("fast, cold (first scrape)", lambda: cold.render(snaps[0]), 1)
    assert isinstance(body, bytes)
    series = sum(1 for line in body.splitlines() if not line.startswith(b"#"))
    turn = iter(snaps[1:] * args.repeat)
    t.run("fast, steady (new nodes)", lambda: cold.render(next(turn)), args.repeat)
    last = snaps[-1]
    t.run("fast, nodes unchanged", lambda: cold.render(last), args.repeat)

    registry = CollectorRegistry()
    registry.register(FleetCollector(lambda: last))
    t.run("collector + generate_latest", lambda: generate_latest(registry), 2)
    gauges, children = gauge_registry(last)
    base_body = t.run("baseline: Gauges + generate_latest", lambda: generate_latest(gauges), 2)
    t.run("baseline: set every child per tick", lambda: set_all(children), 2)
    zipped = t.run("gzip level 1 of the body", lambda: gzip.compress(body, 1), 2)
    t.run("gzip level 6 of the body", lambda: gzip.compress(body, 6), 1)
    assert isinstance(zipped, bytes) and isinstance(base_body, bytes)

    warm_peak, _, _ = peak_mib(lambda: cold.render(snaps[1]))
    renderer_peak, renderer_held, kept = peak_mib(lambda: _rendered(last))
    gauges_peak, gauges_held, kept_gauges = peak_mib(lambda: gauge_registry(last))
    scrape_peak, _, _ = peak_mib(lambda: generate_latest(kept_gauges[0]))  # type: ignore[index]

    print(f"fleet: {args.nodes} nodes x {args.gpus} GPUs, {args.ports} ports/node")
    print(f"series: {series:,}  ({series / (args.nodes * args.gpus):.1f} per GPU)")
    print(f"body: {len(body) / MiB:.1f} MiB, gzip-1 {len(zipped) / MiB:.2f} MiB;")
    print(f"  baseline body {len(base_body) / MiB:.1f} MiB")
    print(f"load average at start: {load[0]:.1f} on {os.cpu_count()} CPUs")
    t.print()
    steady = t.best("fast, steady (new nodes)")
    baseline = t.best("baseline: Gauges + generate_latest")
    print(f"ratio baseline / fast steady:   {baseline / steady:5.1f}x  (fastest runs)")
    print(f"ratio collector / fast steady:  {t.best('collector + generate_latest') / steady:5.1f}x")
    print(f"per series, fast steady: {steady / series * 1e9:.0f} ns")
    print("memory (tracemalloc):")
    print(f"  fast renderer: caches held {renderer_held:.1f} MiB, scrape peak {warm_peak:.1f} MiB")
    print(f"  (first render incl. caches peak {renderer_peak:.1f} MiB)")
    print(f"  baseline Gauges: held {gauges_held:.1f} MiB, scrape peak {scrape_peak:.1f} MiB")
    print(f"  (building them peak {gauges_peak:.1f} MiB)")
    print(f"ratio memory held baseline / fast: {gauges_held / renderer_held:5.1f}x")
    del kept


ROOT = Path(__file__).resolve().parent.parent


def _probe(tree: Path, nodes: int, renders: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    probe = ROOT / "bench" / "lib" / "metrics_probe.py"
    cmd = [sys.executable, str(probe), "--nodes", str(nodes), "--renders", str(renders)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def compare_with(rev: str, nodes: int, rounds: int, renders: int) -> None:
    """This tree's renderer against the one at ``rev``, interleaved, on the same snapshots."""
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as tmp:
        before_tree = Path(tmp)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(before_tree, filter="data")
        runs: dict[str, list[dict[str, object]]] = {"before": [], "after": []}
        for _ in range(rounds):
            runs["before"].append(_probe(before_tree, nodes, renders))
            runs["after"].append(_probe(ROOT, nodes, renders))
    print(f"/metrics render, {nodes} nodes, {rounds} interleaved runs of {renders} renders")
    best = {}
    for name, results in runs.items():
        steady = [float(s) for r in results for s in r["steady_cpu_s"]]  # type: ignore[attr-defined]
        cold = [float(r["cold_cpu_s"]) for r in results]  # type: ignore[arg-type]
        loads = [float(r["load"]) for r in results]  # type: ignore[arg-type]
        best[name] = min(steady)
        label = f"{name} ({rev})" if name == "before" else f"{name} (this tree)"
        print(
            f"  {label:24s} steady CPU fastest {1000 * min(steady):6.0f} ms, median"
            f" {1000 * statistics.median(steady):6.0f} ms; cold {1000 * min(cold):6.0f} ms;"
            f" series {results[-1]['series']:,}, body {int(results[-1]['bytes']) / MiB:.1f} MiB;"  # type: ignore[call-overload]
            f" load {min(loads):.1f}-{max(loads):.1f}"
        )
        print(
            f"  {'':24s} renderer holds {float(results[-1]['held_mib']):.0f} MiB between"  # type: ignore[arg-type]
            f" scrapes, peak {float(results[-1]['peak_mib']):.0f} MiB (tracemalloc)"  # type: ignore[arg-type]
        )
        print(
            f"  {'':24s} serving one scrape peaks"
            f" {float(results[-1]['served_peak_mib']):.0f} MiB plain,"  # type: ignore[arg-type]
            f" {float(results[-1]['served_gzip_peak_mib']):.0f} MiB gzipped (tracemalloc)"  # type: ignore[arg-type]
        )
        for way in ("plain", "gzip", "thread_plain", "thread_gzip"):
            lags = [r[f"lag_{way}"] for r in results if f"lag_{way}" in r]
            if lags:
                print(f"  {'':24s} {_lag_line(way, lags)}")  # type: ignore[arg-type]
    print(f"ratio before / after (fastest steady): {best['before'] / best['after']:.2f}x")


def _lag_line(way: str, lags: list[dict[str, float]]) -> str:
    """One served scrape's effect on the event loop, over the runs: worst and median."""
    worst = max(lag["lag_max_ms"] for lag in lags)
    p99 = statistics.median(lag["lag_p99_ms"] for lag in lags)
    ticks = statistics.median(lag["ticks_per_s"] for lag in lags)
    wall = statistics.median(lag["wall_s"] for lag in lags)
    rss = max(lag["rss_rise_mib"] for lag in lags)
    held = max(lag.get("held_cpu_max_ms", float("nan")) for lag in lags)
    held99 = statistics.median(lag.get("held_cpu_p99_ms", float("nan")) for lag in lags)
    return (
        f"served {way:12s}: scrape {wall:5.2f} s wall; loop waited at most {worst:6.1f} ms"
        f" (p99 {p99:5.1f} ms), woke {ticks:5.0f}/s of 1,000 asked; CPU spent between its"
        f" turns at most {held:5.1f} ms (p99 {held99:5.1f} ms); RSS rose {rss:4.0f} MiB"
    )


def _rendered(snapshot: FleetSnapshot) -> ExpositionRenderer:
    renderer = ExpositionRenderer()
    renderer.render(snapshot)
    return renderer


if __name__ == "__main__":
    main()
