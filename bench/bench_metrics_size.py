"""/metrics body size, series and scrape CPU with and without the raw port counters.

The snapshots come out of the real runtime (bench/lib/metrics_probe.py's canned fleet:
8 GPUs, 8 IB ports with 22 counters, 5 of them absent, 1 NIC per node, every value
moving every tick). For each setting of ``[metrics] raw_port_counters`` one renderer
renders the same consecutive snapshots, the way ``gpufleet serve`` scrapes them: the
first scrape builds the label heads, the later ones are the steady cost reported. It
prints the body size (plain and gzip at level 1, as the endpoint sends it with zlib),
the number of series, and the CPU (``time.process_time``) of each steady scrape.

    PYTHONPATH=. .venv/bin/python bench/bench_metrics_size.py --nodes 1000
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import zlib
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # metrics_probe, after the tree

from metrics_probe import snapshots

from exporter.text import ExpositionRenderer
from fleet.model import FleetSnapshot

MiB = 2**20


def series(body: bytes) -> int:
    """Sample lines in an exposition (lines that are not comments)."""
    return sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))


def measure(ticks: list[FleetSnapshot], raw: bool) -> dict[str, float]:
    """Body size, series and steady scrape CPU of one setting over ``ticks``."""
    renderer = ExpositionRenderer(raw_port_counters=raw, between_chunks=lambda: None)
    renderer.render(ticks[0])  # the first scrape builds label heads: not the steady cost
    cpu: list[float] = []
    body = b""
    for snapshot in ticks[1:]:
        gc.collect()
        started = time.process_time()
        body = renderer.render(snapshot)
        cpu.append(time.process_time() - started)
    return {
        "body_mib": len(body) / MiB,
        "gzip_mib": len(zlib.compress(body, 1)) / MiB,
        "series": series(body),
        "cpu_median_ms": statistics.median(cpu) * 1000,
        "cpu_min_ms": min(cpu) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--scrapes", type=int, default=5, help="steady scrapes per setting")
    args = parser.parse_args()
    ticks = snapshots(args.nodes, args.scrapes + 1)
    gc.freeze()  # the snapshots stay alive for the whole run, as the runtime freezes them
    print(f"{args.nodes} nodes, {args.scrapes} steady scrapes per setting")
    print(
        f"{'raw_port_counters':>18} {'body MiB':>9} {'gzip MiB':>9} {'series':>9} "
        f"{'CPU median ms':>14} {'CPU min ms':>11}"
    )
    for raw in (True, False):
        m = measure(ticks, raw)
        print(
            f"{str(raw).lower():>18} {m['body_mib']:9.1f} {m['gzip_mib']:9.2f} "
            f"{int(m['series']):9d} {m['cpu_median_ms']:14.0f} {m['cpu_min_ms']:11.0f}"
        )


if __name__ == "__main__":
    main()
