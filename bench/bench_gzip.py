"""Gzipping one /metrics body as a streamed scrape does: ours (ISA-L) against zlib.

Prometheus asks for gzip on every scrape. The body comes from the real runtime and
renderer (bench/lib/metrics_probe.py's canned nodes: 8 GPUs, 8 IB ports, 1 NIC each), cut
into the 128 KiB pieces the endpoint compresses one at a time
(:data:`exporter.streaming.FLUSH_BYTES`), and compressed into one gzip stream by

* ``ours``: :func:`exporter.gzip_body.gzip_stream` (ISA-L, what /metrics uses);
* ``zlib``: ``zlib.compressobj`` at level 1, the fastest zlib has (what /metrics used
  until 2026-11-23).

Each is checked against Python's ``gzip.decompress`` (the bytes must come back), timed
in CPU (``time.process_time``) ``--repeat`` times, interleaved; it prints the fastest
and median of each, the output size, and the ratio.

Then the whole of a served scrape: the real endpoint (``MetricsServer`` streaming the
renderer's parts on the event loop) serves a fresh snapshot to a client in another
process, asking for gzip or not, interleaved ``--repeat`` times; it prints the median
CPU this process spent per scrape (render, compression and socket writes), each way.
``--served-only`` measures just that, and so runs on trees from before ISA-L too:

    PYTHONPATH=OLD_TREE .venv/bin/python bench/bench_gzip.py --served-only --repeat 4

    PYTHONPATH=. .venv/bin/python bench/bench_gzip.py --nodes 1000
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import gzip
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # metrics_probe, after the tree

from metrics_probe import scraper, snapshots

from exporter.server import MetricsServer
from exporter.streaming import FLUSH_BYTES
from exporter.text import ExpositionRenderer
from fleet.model import FleetSnapshot

if TYPE_CHECKING:
    from exporter.gzip_body import Compressor

# The client: reads the whole body and drops it, in its own process (its CPU is not ours).
_CLIENT = (
    "import sys, urllib.request as u;"
    "r = u.Request(sys.argv[1], headers={'Accept-Encoding': sys.argv[2]});"
    "u.urlopen(r, timeout=60).read()"
)


def zlib_stream() -> Compressor:
    stream: Compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return stream


def gzip_pieces(pieces: list[bytes], stream: Compressor) -> bytes:
    out = [stream.compress(piece) for piece in pieces]
    out.append(stream.flush())
    return b"".join(out)


async def served_scrapes(fresh: list[FleetSnapshot]) -> dict[str, list[float]]:
    """CPU of this process per scrape served, plain then gzip in turn, one fresh snapshot
    each (as at 1 Hz: no scrape has read it yet)."""
    renderer, current = ExpositionRenderer(), fresh[:1]
    server = MetricsServer("127.0.0.1:0", stream=lambda: renderer.stream_parts(current[0]))
    await server.start()
    url = f"http://127.0.0.1:{server.bound_port}/metrics"
    cpu: dict[str, list[float]] = {"identity": [], "gzip": []}
    try:
        for k, snapshot in enumerate(fresh):
            encoding = ("identity", "gzip")[k % 2]
            current[0] = snapshot
            gc.collect()
            started = time.process_time()
            client = await asyncio.create_subprocess_exec(
                sys.executable, "-c", _CLIENT, url, encoding
            )
            if await client.wait() != 0:
                raise SystemExit(f"the {encoding} scrape failed")
            if k >= 2:  # the first of each way fills the renderer's kept texts
                cpu[encoding].append(time.process_time() - started)
    finally:
        await server.stop()
    return cpu


def compare_compressors(snapshot: FleetSnapshot, repeat: int) -> None:
    """Ours against zlib on the pieces of ``snapshot``'s body, ``repeat`` times each."""
    from exporter.gzip_body import gzip_stream  # not in trees from before ISA-L

    body = b"".join(scraper(ExpositionRenderer())(snapshot))
    pieces = [body[i : i + FLUSH_BYTES] for i in range(0, len(body), FLUSH_BYTES)]
    print(f"body: {len(body) / 2**20:.1f} MiB in {len(pieces)} pieces of 128 KiB")
    makers: dict[str, Callable[[], Compressor]] = {"ours": gzip_stream, "zlib": zlib_stream}
    cpu: dict[str, list[float]] = {name: [] for name in makers}
    size: dict[str, int] = {}
    for _ in range(repeat):
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--served-only", action="store_true", help="skip the compressors")
    args = parser.parse_args()
    fresh = snapshots(args.nodes, 3 + 2 * args.repeat)
    if not args.served_only:
        compare_compressors(fresh[2], args.repeat)
    served = asyncio.run(served_scrapes(fresh[3:]))
    for encoding, seconds in served.items():
        median, best = 1000 * statistics.median(seconds), 1000 * min(seconds)
        print(f"served scrape, {encoding:8s}: median {median:.0f} ms CPU (fastest {best:.0f})")


if __name__ == "__main__":
    main()
