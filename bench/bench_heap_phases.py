"""What makes the controller's resident peak: RSS per tick and per event, in one process.

The work of ``gpufleet serve`` without SSH, in simulated time (one tick per loop, no
waiting): N canned nodes (bench/lib/fleet_nodes.py's shape) decoded and ingested into a
``FleetRuntime`` that **records history into a data directory** (the ring, the minute
rollups and their parquet hour files, transitions and coverage every
``flush_interval_s``), with the runtime's GC policy and its ``HeapFreezer`` (the heap
frozen once settled, a full collection and ``malloc_trim`` every 30 s of simulated
time). /metrics is scraped every 15 ticks as the endpoint serves it: the streamed parts
gzipped one by one, drawn while the next tick's messages are ingested (the endpoint
renders in slices between the loop's other work).

For every tick: the resident set after it, and its **peak** (``VmHWM``, reset through
``/proc/self/clear_refs`` before the tick: native allocations and the history writer
thread included). Each tick is tagged with the events it held: ``minute`` (the history
minute closed: rollup frame, hour file rewritten), ``flush`` (transitions, coverage
and heartbeat written), ``slow`` (every node's slow rows), ``scrape``, ``collect`` (the
scheduled full collection). Printed: RSS at each simulated minute, and per tag the
median and largest rise of the peak above the RSS before the tick.

``--tracemalloc`` adds the largest Python-allocation peak above the start of each phase
(ingest / tick / scrape) by tag (numpy buffers included, polars' jemalloc not); it
slows the run about threefold.

Run a tree against another, interleaved (each a child process with that tree first on
``sys.path``)::

    .venv/bin/python bench/bench_heap_phases.py --nodes 1000 --minutes 3 \
        --tree /tmp/tree-a739 --tree . [--rounds 2]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zlib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20
T0 = 1.8e9  # 2027-01-15T08:00:00Z: a minute boundary, as in fleet_tick
SCRAPE_EVERY = 15
# Ticks before the steady state: the first slow rows, the first scrape (the renderer
# builds its caches), the first minute's rollup. The summary by tag skips them.
STARTUP_TICKS = 60


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * PAGE / MIB


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # resets VmHWM to the current RSS (Linux 4.0+)


def peak_mib() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def child(nodes: int, minutes: float, trace: bool, account: bool) -> dict[str, object]:
    sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # fleet_nodes, fleet_tick
    from fleet_nodes import CannedNode
    from fleet_tick import BenchRuntime
    from memory_account import components, mappings, runtime_roots

    import gpufleet.runtime
    from collectors.protocol import decode_line
    from collectors.ssh.target import NodeTarget
    from collectors.updates import NodeMessage
    from exporter.text import ExpositionRenderer
    from gpufleet.config import Config

    marks: list[tuple[float, float]] = [(0.0, rss_mib())]  # (minute, RSS) after imports
    data_dir = Path(tempfile.mkdtemp(prefix="heap-phases-"))
    names = [f"node-{i:05d}" for i in range(1, nodes + 1)]
    clock = [T0]
    runtime = BenchRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=data_dir,
        clock=lambda: clock[0],
    )  # fmt: skip
    state, history = runtime._state, runtime.history
    renderer = ExpositionRenderer()
    canned = [CannedNode(i, 8, 8, 1.0) for i in range(nodes)]
    freeze = getattr(gpufleet.runtime, "freeze_live_heap", gc.freeze)
    freeze()  # what FleetRuntime.start does
    gc.set_threshold(*gpufleet.runtime.gc_thresholds(gc.get_threshold()))
    for name, node in zip(names, canned, strict=True):
        state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    if trace:
        tracemalloc.start(1)
    ticks = round(minutes * 60)
    traced: dict[str, list[float]] = defaultdict(list)
    scrape: Scrape | None = None
    scrape_bytes = 0
    timeline: list[tuple[int, float, float, float, str]] = []  # k, before, after, peak, tags
    hellos = rss_mib()
    for k in range(1, ticks + 1):
        t = clock[0] = T0 + k
        tags = []
        if k % 10 == 1:
            tags.append("slow")
        minute_before, persist_before = history._minute.minute_ms, history._last_persist
        collected_before = (runtime.heap.frozen_at, runtime.heap.collected_at)
        before = rss_mib()
        reset_peak()
        phase_peaks: dict[str, float] = {}
        # ingest, with the scrape begun on the tick before drawn in between
        if trace:
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
        every = max(1, nodes // 64)
        for i, (name, node) in enumerate(zip(names, canned, strict=True)):
            state.ingest(NodeMessage(name, decode_line(node.sample(t)), t + 0.01))
            if scrape is not None and i % every == 0:
                scrape.advance(8)
        if scrape is not None:
            scrape.advance(1 << 30)
            scrape_bytes = scrape.sent
            tags.append("scrape")
            scrape = None
        if trace:
            phase_peaks["ingest"] = (tracemalloc.get_traced_memory()[1] - base) / MIB
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
        snapshot = runtime.tick(t + 0.5)
        if trace:
            phase_peaks["tick"] = (tracemalloc.get_traced_memory()[1] - base) / MIB
        if k % SCRAPE_EVERY == 0:
            scrape = Scrape(renderer.stream_parts(snapshot))
        if history._minute.minute_ms != minute_before and minute_before is not None:
            tags.append("minute")
        if history._last_persist != persist_before:
            tags.append("flush")
        if (runtime.heap.frozen_at, runtime.heap.collected_at) != collected_before:
            tags.append("collect")
        del snapshot
        after, peak = rss_mib(), peak_mib()
        for tag in tags or ["plain"]:
            for phase, mib in phase_peaks.items():
                if k > STARTUP_TICKS:
                    traced[f"{tag}/{phase}"].append(mib)
        timeline.append((k, round(before, 1), round(after, 1), round(peak, 1), "+".join(tags)))
        if k % 60 == 0:
            marks.append((k / 60, after))
        if trace and k == 60:
            first_minute = tracemalloc.take_snapshot()
    grown = _grown_since(first_minute) if trace and ticks > 60 else []
    parts = {}
    if account:  # what each part keeps at the end (the renderer after its last scrape)
        roots = [*runtime_roots(runtime), ("the bench's canned nodes", canned)]
        parts = {"parts": components(roots), "mappings": mappings(os.getpid())}
    history.close()
    return {
        "marks": marks,
        "hellos": hellos,
        "traced": {tag: _summary(v) for tag, v in traced.items()},
        "timeline": timeline,
        "scrape_bytes": scrape_bytes,
        "grown": grown,
        **parts,
    }


def _grown_since(earlier: tracemalloc.Snapshot) -> list[tuple[str, float, int]]:
    """The lines whose live allocations grew most from minute 1 to the end (MiB, count)."""
    later = tracemalloc.take_snapshot()
    stats = later.compare_to(earlier, "lineno")
    return [(str(st.traceback), round(st.size_diff / MIB, 2), st.count_diff) for st in stats[:15]]


class Scrape:
    """One streamed, gzipped /metrics body, advanced a few parts at a time."""

    def __init__(self, parts: Iterator[bytes]) -> None:
        self.parts: Iterator[bytes] | None = parts
        self.zipper = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        self.sent = 0

    def advance(self, count: int) -> None:
        for _ in range(count):
            part = None if self.parts is None else next(self.parts, None)
            if part is None:
                if self.parts is not None:
                    self.sent += len(self.zipper.flush())
                self.parts = None
                return
            self.sent += len(self.zipper.compress(part))


def _summary(values: list[float]) -> tuple[int, float, float]:
    return len(values), round(statistics.median(values), 1), round(max(values), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=3.0, help="simulated minutes")
    parser.add_argument("--tree", action="append", help="a source tree to run (repeatable)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--account", action="store_true", help="what each part keeps at the end")
    parser.add_argument("--timeline", type=Path, help="write every tick's RSS/peak/tags here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.nodes, args.minutes, args.tracemalloc, args.account)))
        return
    trees = args.tree or ["."]
    print(f"{args.nodes} nodes x 8 GPUs, {args.minutes:g} simulated minutes, history recorded, "
          f"/metrics every {SCRAPE_EVERY} ticks; load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for r in range(args.rounds):
        for tree in trees:
            env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
            cmd = [sys.executable, __file__, "--child", "--nodes", str(args.nodes)]
            cmd += ["--minutes", str(args.minutes)] + (["--tracemalloc"] * args.tracemalloc)
            cmd += ["--account"] * args.account
            began = time.monotonic()
            out = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True).stdout)
            report(tree, r, out, time.monotonic() - began)
            if args.timeline:
                path = args.timeline.with_suffix(f".{Path(tree).resolve().name}.{r}.json")
                path.write_text(json.dumps(out["timeline"]))


def report(tree: str, r: int, out: dict, wall: float) -> None:
    timeline = out["timeline"]
    peak = max(p for _, _, _, p, _ in timeline)
    window = [p for k, _, _, p, _ in timeline if k > STARTUP_TICKS]
    first_scrape = next(t for t in timeline if "scrape" in t[4])
    print(f"\n== {tree} (round {r + 1}, {wall:.0f} s wall, load {os.getloadavg()[0]:.1f})")
    print("  RSS at minute: " + "  ".join(f"{m:g}: {v:.0f}" for m, v in out["marks"]))
    print(f"  start-up: imports {out['marks'][0][1]:.0f}, after the hellos {out['hellos']:.0f}, "
          f"tick 1 {timeline[0][2]:.0f}, before the first scrape {first_scrape[1]:.0f}, "
          f"after it {first_scrape[2]:.0f} MiB (tick {first_scrape[0]})")  # fmt: skip
    print(f"  peak over the run {peak:.0f} MiB; after minute 1: {max(window, default=0):.0f} MiB")
    # One reading per mark compares collection and scrape phases: each minute's median
    # of the per-tick RSS is the steadier figure, its peak the one a limit must hold.
    minutes = [timeline[m * 60 : (m + 1) * 60] for m in range(len(timeline) // 60)]
    median = {m + 1: statistics.median(t[2] for t in ticks) for m, ticks in enumerate(minutes)}
    top = {m + 1: max(t[3] for t in ticks) for m, ticks in enumerate(minutes)}
    print("  RSS median / peak in minute: "
          + "  ".join(f"{m}: {median[m]:.0f}/{top[m]:.0f}" for m in median))  # fmt: skip
    if 5 in median and 15 in median:
        grew = median[15] - median[5]
        print(f"  growth minute 5 -> 15 (medians): {grew:+.1f} MiB "
              f"({100 * grew / median[5]:+.1f} %)")  # fmt: skip
    rises: dict[str, list[float]] = defaultdict(list)
    for _, before, _, peak_in, tags in timeline[STARTUP_TICKS:]:
        for tag in tags.split("+") if tags else ["plain"]:
            rises[tag].append(peak_in - before)
    print(f"  after tick {STARTUP_TICKS}: peak rise above the RSS before the tick, by tag "
          "(ticks, median, max MiB):")  # fmt: skip
    for tag, values in sorted(rises.items()):
        n, med, top = _summary(values)
        print(f"    {tag:8s} {n:5d} {med:7.1f} {top:7.1f}")
    if out["traced"]:
        print("  tracemalloc peak above the phase's start (ticks, median, max MiB):")
        for tag, (n, med, top) in sorted(out["traced"].items()):
            print(f"    {tag:16s} {n:5d} {med:7.1f} {top:7.1f}")
    if "parts" in out:
        print("  resident by mapping at the end (MiB):", out["mappings"])
        print("  reachable from each part at the end (first root wins):")
        for name, (mib, objects) in out["parts"].items():
            print(f"    {mib:8.1f} MiB {objects:>9,} objects  {name}")
    if out.get("grown"):
        print("  tracemalloc: live allocations grown from minute 1 to the end (MiB, objects):")
        for where, mib, count in out["grown"]:
            print(f"    {mib:7.2f} {count:>9,}  {where}")


if __name__ == "__main__":
    main()
