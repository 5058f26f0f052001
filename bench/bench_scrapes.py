"""Many Prometheus servers scraping one exporter at once: scrapes per second and p99.

The exporter is the real one (``start_metrics_endpoint`` over a ``FleetRuntime``),
serving canned nodes in the shape of bench/lib/fleet_nodes.py (8 GPUs, 8 IB ports, 1
NIC each, every value moving every tick): each interval every node's sample is decoded
and ingested and the runtime ticks, as ``gpufleet serve`` does. ``--scrapers`` clients in
another process (aiohttp, one keep-alive connection each, as Prometheus keeps one per
target) each scrape ``/metrics`` with gzip back to back for ``--seconds``; it prints the
scrapes per second, the median and p99 latency, and, where the tree shares a rendering
between the scrapes of one tick, how many renderings it made.

The two processes share the machine's cores (the clients decode nothing: the gzip
bodies are read and dropped). Run it on another tree to compare:

    PYTHONPATH=. .venv/bin/python bench/bench_scrapes.py --nodes 1000 --scrapers 50
    PYTHONPATH=OLD_TREE .venv/bin/python bench/bench_scrapes.py --nodes 1000 --scrapers 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # fleet_nodes, after the tree

from fleet_nodes import CannedNode

from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from exporter.endpoint import start_metrics_endpoint
from gpufleet.config import Config
from gpufleet.runtime import FleetRuntime


class CannedFleet:
    """A runtime fed by canned nodes: one sample per node per tick, then the tick."""

    def __init__(self, count: int) -> None:
        names = [f"node-{i:05d}" for i in range(1, count + 1)]
        targets = [NodeTarget(name=n, host=n) for n in names]
        self.runtime = FleetRuntime(Config(), targets, data_dir=None, clock=time.time)
        canned = [CannedNode(i, 8, 8, 1.0) for i in range(count)]
        self._nodes = list(zip(names, canned, strict=True))
        now = time.time()
        for name, node in self._nodes:
            self.runtime._state.ingest(NodeMessage(name, decode_line(node.hello(now)), now))
        self.step()

    def step(self) -> None:
        now = time.time()
        state = self.runtime._state  # fed as the SSH fleet would
        for name, node in self._nodes:
            state.ingest(NodeMessage(name, decode_line(node.sample(now)), now))
        self.runtime.tick(now)

    async def tick_forever(self, interval: float) -> None:
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            self.step()


async def serve(args: argparse.Namespace) -> dict[str, Any]:
    fleet = CannedFleet(args.nodes)
    server = await start_metrics_endpoint("127.0.0.1:0", fleet.runtime)
    ticker = asyncio.create_task(fleet.tick_forever(args.interval))
    try:
        client = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--client",
            f"{server.url}/metrics",
            "--scrapers",
            str(args.scrapers),
            "--seconds",
            str(args.seconds),
            stdout=subprocess.PIPE,
        )
        out, _ = await client.communicate()
    finally:
        ticker.cancel()
        await server.stop()
    result: dict[str, Any] = json.loads(out)
    bodies = getattr(server, "bodies", None)  # trees that share a rendering per tick
    if bodies is not None:
        result["renders"] = dict(bodies.renders)
        result["joined"] = bodies.joined
    return result


async def scrape_for(url: str, scrapers: int, seconds: float) -> dict[str, Any]:
    import aiohttp

    latencies: list[float] = []
    failed = 0
    deadline = time.perf_counter() + seconds

    async def one_scraper() -> None:
        nonlocal failed
        headers = {"Accept-Encoding": "gzip"}
        async with aiohttp.ClientSession(auto_decompress=False) as session:
            while time.perf_counter() < deadline:
                began = time.perf_counter()
                async with session.get(url, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        failed += 1
                        continue
                latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(one_scraper() for _ in range(scrapers)))
    wall = time.perf_counter() - began
    ordered = sorted(latencies)
    return {
        "scrapes": len(latencies),
        "failed": failed,
        "wall_s": round(wall, 2),
        "scrapes_per_s": round(len(latencies) / wall, 1),
        "p50_s": round(statistics.median(ordered), 3),
        "p99_s": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--scrapers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=1.0, help="tick interval, s")
    parser.add_argument("--client", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(asyncio.run(scrape_for(args.client, args.scrapers, args.seconds))))
        return
    result = asyncio.run(serve(args))
    result |= {"nodes": args.nodes, "scrapers": args.scrapers, "interval_s": args.interval}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
