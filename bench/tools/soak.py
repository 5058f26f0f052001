"""Soak: the whole controller over time, with nodes flapping. Does anything grow?

Runs N canned loopback nodes (default 200) in a separate process on 127.0.0.1 and a
real :class:`FleetRuntime` watching them in this one (SSH, decode, state, verdicts,
the history ring, rollups and parquet in a temporary data directory, a /metrics
render per minute). Every ``--flap-every`` seconds ``--flap-percent`` of the nodes,
picked at random, have their connections cut on the server side (a dead link): the
controller marks them, reconnects and restarts their agents.

Once a minute it prints RSS, open file descriptors, asyncio tasks and threads of this
process (the controller alone: the nodes live in the other process). The baseline is
the process itself earlier in the run: the last line compares RSS growth over the
second half of the run with the first half, and a plateau shows as growth near zero.

    PYTHONPATH=. .venv/bin/python bench/tools/soak.py --nodes 200 --minutes 20
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import threading
import time
from pathlib import Path

from exporter.text import render_exposition
from gpufleet.config import parse_config
from gpufleet.runtime import FleetRuntime
from testkit.loopback.harness import fast_options
from testkit.loopback.process import LoopbackProcess


def rss_mib() -> float:
    """Resident set size of this process, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def soak(nodes: int, minutes: float, flap_percent: float, flap_every: float) -> None:
    config = parse_config(
        {"fleet": {"hosts": [f"node-[001-{nodes:03d}]"], "interval": 1.0, "slow_interval": 10.0}}
    )
    rng = random.Random(7)
    async with LoopbackProcess(nodes, gpus=8) as servers:
        targets = servers.targets(interval=1.0, slow_interval=10.0)
        options = fast_options(connect_timeout=10.0, backoff_cap=2.0)
        with tempfile.TemporaryDirectory(prefix="gpufleet-soak-") as data:
            runtime = FleetRuntime(config, targets, data_dir=Path(data), ssh_options=options)
            await runtime.start()
            print(f"# {nodes} nodes, {flap_percent:g} % flapping every {flap_every:g} s, "
                  f"{minutes:g} min; pid {os.getpid()}, nodes in pid {servers.pid}")  # fmt: skip
            print("minute  rss_mib  fds  tasks  threads  streaming  flaps  scrape_kib")
            start = time.monotonic()
            next_flap, next_report, minute, flaps = start + flap_every, start, 0, 0
            rss: list[float] = []
            try:
                while (now := time.monotonic()) < start + minutes * 60:
                    if now >= next_flap:
                        names = [
                            t.name
                            for t in rng.sample(targets, max(1, int(nodes * flap_percent / 100)))
                        ]
                        await servers.drop(names)
                        flaps += len(names)
                        next_flap += flap_every
                    if now >= next_report:
                        snap = runtime.latest()
                        scrape = len(render_exposition(snap)) / 1024 if snap else 0.0
                        streaming = snap.nodes_streaming if snap else 0
                        rss.append(rss_mib())
                        tasks, threads = len(asyncio.all_tasks()), threading.active_count()
                        print(f"{minute:6d}  {rss[-1]:7.1f}  {open_fds():3d}  {tasks:5d}  "
                              f"{threads:7d}  {streaming:9d}  {flaps:5d}  {scrape:10.0f}",
                              flush=True)  # fmt: skip
                        minute += 1
                        next_report += 60
                    await asyncio.sleep(1.0)
            finally:
                await runtime.stop()
    if len(rss) >= 4:
        half = len(rss) // 2
        first = (rss[half] - rss[0]) / rss[0] * 100
        second = (rss[-1] - rss[half]) / rss[half] * 100
        print(f"RSS growth: first half {first:+.1f} %, second half {second:+.1f} % "
              f"({rss[0]:.0f} -> {rss[half]:.0f} -> {rss[-1]:.0f} MiB)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--flap-percent", type=float, default=10.0)
    parser.add_argument("--flap-every", type=float, default=30.0)
    args = parser.parse_args()
    asyncio.run(soak(args.nodes, args.minutes, args.flap_percent, args.flap_every))


if __name__ == "__main__":
    main()
