"""Gzipping one /metrics body as a streamed scrape does: ours (ISA-L) against zlib.

Prometheus asks for gzip on every scrape. The body comes from the real runtime and
renderer (bench/metrics_probe.py's canned nodes: 8 GPUs, 8 IB ports, 1 NIC each), cut
into the 128 KiB pieces the endpoint compresses one at a time
(:data:`fleet.metrics.streaming.FLUSH_BYTES`), and compressed into one gzip stream by

* ``ours``: :func:`fleet.metrics.gzip_body.gzip_stream` (ISA-L, what /metrics uses);
* ``zlib``: ``zlib.compressobj`` at level 1, the fastest zlib has (what /metrics used
  until 2026-11-23).

Each is checked against Python's ``gzip.decompress`` (the bytes must come back), timed
in CPU (``time.process_time``) ``--repeat`` times, interleaved; it prints the fastest
and median of each, the output size, and the ratio.

    PYTHONPATH=. .venv/bin/python bench/bench_gzip.py --nodes 1000
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # metrics_probe, after the tree

from metrics_probe import scraper, snapshots

from fleet.metrics.gzip_body import Compressor, gzip_stream
from fleet.metrics.streaming import FLUSH_BYTES
from fleet.metrics.text import ExpositionRenderer


def zlib_stream() -> Compressor:
    stream: Compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return stream


def gzip_pieces(pieces: list[bytes], stream: Compressor) -> bytes:
    out = [stream.compress(piece) for piece in pieces]
    out.append(stream.flush())
    return b"".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    snapshot = snapshots(args.nodes, 3)[-1]
    body = b"".join(scraper(ExpositionRenderer())(snapshot))
    pieces = [body[i : i + FLUSH_BYTES] for i in range(0, len(body), FLUSH_BYTES)]
    print(f"body: {len(body) / 2**20:.1f} MiB in {len(pieces)} pieces of 128 KiB")
    makers: dict[str, Callable[[], Compressor]] = {"ours": gzip_stream, "zlib": zlib_stream}
    cpu: dict[str, list[float]] = {name: [] for name in makers}
    size: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, make in makers.items():
            started = time.process_time()
            out = gzip_pieces(pieces, make())
            cpu[name].append(time.process_time() - started)
            if gzip.decompress(out) != body:
                raise SystemExit(f"{name}: the gzip stream does not decompress to the body")
            size[name] = len(out)
    for name in makers:
        best, median = 1000 * min(cpu[name]), 1000 * statistics.median(cpu[name])
        print(
            f"{name:5s} fastest {best:6.1f} ms, median {median:6.1f} ms CPU per body; "
            f"{len(body) / min(cpu[name]) / 1e6:5.0f} MB/s; out {size[name] / 2**20:.2f} MiB"
        )
    ratio = statistics.median(cpu["zlib"]) / statistics.median(cpu["ours"])
    smaller = size["ours"] / size["zlib"]
    print(f"zlib / ours (median CPU): {ratio:.2f}x; size ours / zlib {smaller:.3f}")


if __name__ == "__main__":
    main()
