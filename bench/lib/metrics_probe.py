"""One tree's /metrics render cost on realistic snapshots, as JSON (run by bench_metrics.py).

The snapshots come out of the real runtime: canned agent lines in the shape of
bench/lib/fleet_nodes.py (8 GPUs, 8 IB ports with 22 counters, 5 of them absent, 1 NIC,
every value moving every tick) are decoded, ingested and ticked, so the render sees
what ``gpufleet serve`` would. The tree under test is the one first on PYTHONPATH.
CPU is ``time.process_time``; the heap is frozen and the young-generation threshold
raised as the runtime does, so collections of the snapshots do not count. A scrape is
what the endpoint serves: ``render_parts`` where the tree has it (the parts are written
one by one), else ``render`` (one joined body). Served, a scrape goes the way the tree's
endpoint sends it: streamed on the event loop where the tree's renderer has
``stream_parts`` (``MetricsServer(stream=...)``), else rendered in a worker thread.

Beside a served scrape a ticker on the event loop asks to wake every millisecond: the
longest it waited past that (the longest stretch the scrape kept the loop from other
work, the SSH streams' reads included) and how often it ran say whether ingest would
stall. Wall-clock waits on a shared machine include the time the OS gave the CPU to
other processes; the CPU this process spent between the ticker's asking and waking
(``held_cpu``) counts only the scrape's own hold on the loop (its slices, or the worker
thread's turns with the interpreter). The RSS rise is /proc's peak (VmHWM, reset
before the scrape) over the RSS before.

Run alone: ``PYTHONPATH=TREE .venv/bin/python bench/lib/metrics_probe.py --nodes 1000``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import inspect
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))  # fleet_nodes, after the tree

from fleet_nodes import CannedNode

from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from exporter.server import MetricsServer
from exporter.text import ExpositionRenderer
from fleet.model import FleetSnapshot
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime

T0 = 1.8e9


def snapshots(count: int, ticks: int) -> list[FleetSnapshot]:
    """``ticks`` consecutive snapshots of ``count`` streaming canned nodes."""
    names = [f"node-{i:05d}" for i in range(1, count + 1)]
    runtime = FleetRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=None, clock=time.time
    )
    state = runtime._state  # fed as the SSH fleet would
    nodes = [CannedNode(i, 8, 8, 1.0) for i in range(count)]
    for name, node in zip(names, nodes, strict=True):
        state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    out = []
    for k in range(1, ticks + 1):
        for name, node in zip(names, nodes, strict=True):
            state.ingest(NodeMessage(name, decode_line(node.sample(T0 + k)), T0 + k))
        out.append(runtime.tick(T0 + k + 0.5))
    return out


Scrape = Callable[[FleetSnapshot], list[bytes]]


def scraper(renderer: ExpositionRenderer) -> Scrape:
    """What the endpoint serves: the parts where the tree has them, else the one body."""
    parts = getattr(renderer, "render_parts", None)
    if parts is not None:
        return parts
    return lambda snapshot: [renderer.render(snapshot)]


def memory_of_a_scrape(count: int) -> tuple[float, float]:
    """MiB a renderer keeps between scrapes (after two), and the peak of the third scrape,
    under tracemalloc (a separate pass: tracing slows the timed code). Each snapshot is
    fresh and dropped after its scrape, so GPU and port objects a scrape builds count
    toward its peak and not toward what is held."""
    snaps = snapshots(count, 3)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    scrape = scraper(ExpositionRenderer())
    for _ in range(2):
        scrape(snaps.pop(0))
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.reset_peak()
    body = scrape(snaps.pop(0))
    peak = tracemalloc.get_traced_memory()[1] - base
    del body
    tracemalloc.stop()
    return held / 2**20, peak / 2**20


def _read_and_drop(port: int, zipped: bool) -> int:
    """GET /metrics, reading the body 1 MiB at a time and keeping none of it; its length."""
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        headers = {"Connection": "close"} | ({"Accept-Encoding": "gzip"} if zipped else {})
        client.request("GET", "/metrics", headers=headers)
        response, size = client.getresponse(), 0
        while block := response.read(1 << 20):
            size += len(block)
        return size
    finally:
        client.close()


def _streams(renderer: ExpositionRenderer) -> bool:
    """Whether the tree's endpoint renders on the loop while sending (``stream=``)."""
    return hasattr(renderer, "stream_parts") and (
        "stream" in inspect.signature(MetricsServer).parameters
    )


def _threads() -> bool:
    """Whether the tree's endpoint can still render in a worker thread (``render=``; the
    streamed render replaced it, and it was removed on 2026-11-23)."""
    return "render" in inspect.signature(MetricsServer).parameters


def _server(
    renderer: ExpositionRenderer, current: list[FleetSnapshot], threaded: bool = False
) -> MetricsServer:
    """The tree's endpoint for ``current[0]``: streamed on the loop where it can (unless
    ``threaded``), else rendered in a worker thread."""
    stream = getattr(renderer, "stream_parts", None)
    if stream is not None and _streams(renderer) and not (threaded and _threads()):
        return MetricsServer("127.0.0.1:0", stream=lambda: stream(current[0]))
    render = getattr(renderer, "render_parts", renderer.render)
    return MetricsServer("127.0.0.1:0", render=lambda: render(current[0]))


async def _serve_each(renderer: ExpositionRenderer, fresh: list[FleetSnapshot]) -> list[float]:
    current = fresh[:1]
    server = _server(renderer, current)
    await server.start()
    peaks = []
    try:
        for zipped, snapshot in zip((False, True), fresh, strict=True):
            current[0] = snapshot  # a snapshot no scrape has read yet, as at 1 Hz
            gc.collect()
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            await asyncio.to_thread(_read_and_drop, server.bound_port, zipped)
            peaks.append((tracemalloc.get_traced_memory()[1] - base) / 2**20)
    finally:
        await server.stop()
    return peaks


def served_peaks(count: int) -> list[float]:
    """Peak MiB above what was held while the endpoint serves one steady scrape, plain
    then gzipped, as the tree's endpoint sends it (tracemalloc; the client keeps none of
    the body)."""
    snaps = snapshots(count, 4)
    renderer = ExpositionRenderer()
    for snapshot in snaps[:2]:
        renderer.render(snapshot)
    tracemalloc.start()
    try:
        return asyncio.run(_serve_each(renderer, snaps[2:]))
    finally:
        tracemalloc.stop()


_READER = """
import http.client, sys
print("ready", flush=True)
sys.stdin.readline()
client = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=600)
headers = {"Connection": "close"} | ({"Accept-Encoding": "gzip"} if sys.argv[2] == "gzip" else {})
client.request("GET", "/metrics", headers=headers)
response = client.getresponse()
while response.read(1 << 20):
    pass
print("done", flush=True)
"""


def _reset_peak_rss() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux)


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def _lag_beside(port: int, zipped: bool) -> dict[str, float]:
    """Serve one scrape while a ticker on the loop asks to wake every millisecond."""
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    held: list[float] = []  # CPU this process spent between asking and waking
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            asked, spent = loop.time(), time.process_time()
            await asyncio.sleep(0.001)
            lags.append(loop.time() - asked - 0.001)
            held.append(time.process_time() - spent)

    # The scraper in its own process, as Prometheus is: a reader thread here would take
    # the interpreter from the loop at every socket write and count against it.
    reader = [sys.executable, "-c", _READER, str(port), "gzip" if zipped else "plain"]
    scraper = await asyncio.create_subprocess_exec(
        *reader, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert scraper.stdin is not None and scraper.stdout is not None
    await scraper.stdout.readline()  # started: its start-up is not the scrape's
    ticker = asyncio.create_task(tick())
    _reset_peak_rss()
    rss = _rss_kib("VmRSS")
    began = time.perf_counter()
    scraper.stdin.write(b"go\n")
    await scraper.stdout.readline()
    wall = time.perf_counter() - began
    await scraper.wait()
    done.set()
    await ticker
    return {
        "wall_s": wall,
        "lag_max_ms": 1000 * max(lags, default=0.0),
        "lag_p99_ms": 1000 * statistics.quantiles(lags, n=100, method="inclusive")[98]
        if len(lags) > 2
        else 0.0,
        "ticks_per_s": len(lags) / wall,
        "held_cpu_max_ms": 1000 * max(held, default=0.0),
        "held_cpu_p99_ms": 1000 * statistics.quantiles(held, n=100, method="inclusive")[98]
        if len(held) > 2
        else 0.0,
        "rss_rise_mib": (_rss_kib("VmHWM") - rss) / 1024,
    }


async def _lag_each(
    renderer: ExpositionRenderer, runs: list[tuple[bool, bool, FleetSnapshot]]
) -> list[Any]:
    current = [runs[0][2]]
    servers = {threaded: _server(renderer, current, threaded) for threaded in (False, True)}
    for server in servers.values():
        await server.start()
    try:
        out = []
        for threaded, zipped, snapshot in runs:
            current[0] = snapshot
            gc.collect()
            out.append(await _lag_beside(servers[threaded].bound_port, zipped))
        return out
    finally:
        for server in servers.values():
            await server.stop()


def loop_lags(count: int) -> dict[str, Any]:
    """The loop's longest wait, ticks and RSS rise while the tree's endpoint serves one
    steady scrape, plain then gzipped (no tracing); where the tree streams on the loop,
    the same through a worker thread too, interleaved (the way before, same run)."""
    both = _streams(ExpositionRenderer()) and _threads()
    ways = [(False, False), (True, False), (False, True), (True, True)] if both else []
    ways = ways or [(False, False), (False, True)]
    snaps = snapshots(count, 2 + len(ways))
    renderer = ExpositionRenderer()
    for snapshot in snaps[:2]:
        renderer.render(snapshot)
    runs = [
        (threaded, zipped, snap) for (threaded, zipped), snap in zip(ways, snaps[2:], strict=True)
    ]
    lags = asyncio.run(_lag_each(renderer, runs))
    return {
        f"lag{'_thread' if threaded else ''}_{'gzip' if zipped else 'plain'}": lag
        for (threaded, zipped), lag in zip(ways, lags, strict=True)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--renders", type=int, default=6)
    args = parser.parse_args()
    snaps = snapshots(args.nodes, args.renders + 1)
    gc.freeze()
    gc.set_threshold(20_000, *gc.get_threshold()[1:])
    scrape = scraper(ExpositionRenderer())
    cpu, wall, parts = [], [], []
    for snapshot in snaps:
        started, began = time.process_time(), time.perf_counter()
        parts = scrape(snapshot)
        cpu.append(time.process_time() - started)
        wall.append(time.perf_counter() - began)
    body = b"".join(parts)
    size = len(body)
    series = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
    del body, parts, snaps
    held, peak = memory_of_a_scrape(args.nodes)
    served_plain, served_gzip = served_peaks(args.nodes)
    lags = loop_lags(args.nodes)
    result = {
        "tree": sys.path[1] if len(sys.path) > 1 else "",
        "cold_cpu_s": cpu[0],
        "steady_cpu_s": cpu[1:],
        "steady_wall_s": wall[1:],
        "series": series,
        "bytes": size,
        "held_mib": held,
        "peak_mib": peak,
        "served_peak_mib": served_plain,
        "served_gzip_peak_mib": served_gzip,
        **lags,
        "load": os.getloadavg()[0],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
