"""The attached viewer's CPU at 1,000 nodes, through its real code path over real NATS.

A publisher process plays N shards (rendezvous-hashed nodes of 8 GPUs, 8 InfiniBand
ports and a NIC, Ed25519-signed summaries in 250-node parts, one summary per shard per
second, as ``serve --shard`` sends them); ``changed`` of the nodes have new readings on
every GPU each second (busy GPUs: all of them). This process runs ``AttachedFleet``
with the shards' public keys (verify, decode, bounds, ownership, board, tick) and
measures its own CPU, in three modes taken in turn in the same run, so the machine's
load hits each alike:

- ``floor``: summaries received, verified, decoded and applied; no snapshot built;
- ``rebuild``: the board before it carried summaries (every node converted to
  GpuSnapshots and PortSnapshots every tick);
- ``carried``: the board as it is (``cluster.summary_rows``).

No listener draws: this is the viewer's data path (bench_tui measures drawing).

    PYTHONPATH=. .venv/bin/python bench/bench_viewer.py --nodes 1000 --shards 4 --window 20
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # after PYTHONPATH's tree

import nats
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from scale_viewer import naive_snapshot

from cluster.attach import AttachedFleet
from cluster.board import ShardBoard
from cluster.natsd import start_nats_server
from cluster.shards import assign
from cluster.signing import ShardKeys, ShardSigner
from cluster.wire import summarize, summary_subject
from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot, PortSnapshot

TICKS = 10  # distinct ticks the publisher loops over
ROOT = str(Path(__file__).resolve().parent.parent)


def key(shard: int) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(bytes([shard]) * 32)  # a bench key, not secret


def canned_node(name: str, rng: random.Random) -> NodeSnapshot:
    gpus = tuple(
        GpuSnapshot(
            i,
            f"GPU-{name}-{i}",
            "NVIDIA H100 80GB HBM3",
            serial=f"16{i:011d}",
            memory_total_bytes=80 << 30,
            util_gpu=float(rng.randrange(101)),
            mem_used_bytes=rng.randrange(80) << 30,
            power_w=float(rng.randrange(100, 700)),
            power_limit_w=700.0,
            temp_c=float(rng.randrange(30, 80)),
            nvlink_active=18,
            nvlink_total=18,
            verdict="ok",
            since=1_800_000_000.0,
        )
        for i in range(8)
    )
    ports = tuple(
        PortSnapshot(f"mlx5_{i}/1", "ib", "ACTIVE", "LinkUp", 400.0, 400.0, 0, verdict="ok")
        for i in range(8)
    )
    nic = PortSnapshot("eth0", "eth", "up", rate_gbps=100.0, verdict="ok")
    return NodeSnapshot(
        name, "streaming", state="up", gpus=gpus, ports=ports, nics=(nic,), model="H100"
    )


def sealed_ticks(
    nodes: int, shards: int, changed: float, seed: int = 1
) -> list[list[tuple[int, bytes]]]:
    """Per tick, every shard's signed summary parts: ``changed`` of the nodes get new
    readings on every GPU each tick, and every node a new ``last_seen``."""
    rng = random.Random(seed)
    names = [f"node-{i:05d}" for i in range(nodes)]
    fleet = {n: canned_node(n, rng) for n in names}
    owned = assign(names, shards)
    signers = {k: ShardSigner(k, key(k)) for k in range(1, shards + 1)}
    out = []
    for tick in range(TICKS):
        t = 1_800_000_000.0 + tick
        for name in rng.sample(names, round(changed * nodes)):
            old = fleet[name]
            gpus = tuple(
                replace(
                    g, util_gpu=float(rng.randrange(101)), power_w=float(rng.randrange(100, 700))
                )
                for g in old.gpus
            )
            fleet[name] = replace(old, gpus=gpus)
        fleet = {n: replace(node, last_seen=t) for n, node in fleet.items()}
        out.append(
            [
                (k, signers[k].seal(part))
                for k in range(1, shards + 1)
                for part in summarize(
                    k, shards, tick + 1, 1.0, [fleet[n] for n in owned.get(k, [])], t
                )
            ]
        )
    return out


async def publish(url: str, nodes: int, shards: int, changed: float) -> None:
    """The shards' side: the same ticks over and over, one a second."""
    ticks = sealed_ticks(nodes, shards, changed)
    nc = await nats.connect(url)
    loop = asyncio.get_running_loop()
    start = loop.time()
    for n in range(10**9):
        for shard, data in ticks[n % TICKS]:
            await nc.publish(summary_subject(shard), data)
        await nc.flush()
        await asyncio.sleep(max(0.0, start + n + 1 - loop.time()))


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class FloorViewer(AttachedFleet):
    """Receives, verifies, decodes and applies; builds no snapshot."""

    def tick(self, now: float | None = None) -> FleetSnapshot:
        return FleetSnapshot(taken_at=self._clock() if now is None else now, nodes=())


class RebuildBoard(ShardBoard):
    """The board before summaries were carried: every node converted every tick."""

    def snapshot(self, now: float) -> FleetSnapshot:
        return naive_snapshot(self, now)


async def measure(url: str, mode: str, nodes: int, shards: int, window: float) -> dict[str, float]:
    keys = ShardKeys([key(k).public_key() for k in range(1, shards + 1)])
    viewer = (FloorViewer if mode == "floor" else AttachedFleet)(url, keys=keys, sla_refresh_s=1e9)
    if mode == "rebuild":
        viewer.board = RebuildBoard()
    tick_cpu: list[float] = []
    plain_tick = viewer.tick

    def timed_tick(now: float | None = None) -> FleetSnapshot:
        t0 = cpu_s()
        snapshot = plain_tick(now)
        tick_cpu.append(cpu_s() - t0)
        return snapshot

    viewer.tick = timed_tick  # type: ignore[method-assign]
    await viewer.start()
    while sum(len(s.summary.nodes) for s in viewer.board.shards.values()) < nodes:  # noqa: ASYNC110 (no event says every part arrived)
        await asyncio.sleep(0.1)  # polling the viewer while the first parts arrive
    await asyncio.sleep(2.5)  # two ticks: the first snapshot builds every node in any mode
    cpu0, wall0, ticks0 = cpu_s(), time.monotonic(), len(tick_cpu)
    await asyncio.sleep(window)
    cpu1, wall1 = cpu_s(), time.monotonic()
    await viewer.stop()
    per_tick = tick_cpu[ticks0:]
    return {
        "core_pct": 100 * (cpu1 - cpu0) / (wall1 - wall0),
        "tick_ms": 1000 * statistics.median(per_tick) if per_tick else float("nan"),
    }


async def run(
    nodes: int, shards: int, window: float, changed: float
) -> dict[str, list[dict[str, float]]]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    server = await start_nats_server(tmp / "nats")
    publisher = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--publish", server.url, "--nodes", str(nodes),
        "--shards", str(shards), "--changed", str(changed),
        env={**os.environ, "PYTHONPATH": ROOT},
    )  # fmt: skip
    results: dict[str, list[dict[str, float]]] = {"floor": [], "rebuild": [], "carried": []}
    try:
        for mode in ("floor", "rebuild", "carried", "carried", "rebuild", "floor"):
            results[mode].append(await measure(server.url, mode, nodes, shards, window))
    finally:
        publisher.terminate()
        await publisher.wait()
        await server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--changed", type=float, nargs="+", default=[1.0, 0.0])
    parser.add_argument("--publish", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.publish:
        asyncio.run(publish(args.publish, args.nodes, args.shards, args.changed[0]))
        return
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next(
        (ln.split(":", 1)[1].strip() for ln in cpu.splitlines() if "Model name" in ln), "?"
    )
    print(f"# {model}, {os.cpu_count()} CPUs; load before: {os.getloadavg()}")
    print(
        f"# {args.nodes} nodes, {args.shards} shards, 1 Hz, {args.window:g} s windows, viewer CPU"
    )
    print(
        "| nodes with new readings | floor (verify + decode) | rebuild every node | carried "
        "| tick CPU: rebuild / carried |"
    )
    print("|---|---|---|---|---|")
    for changed in args.changed:
        r = asyncio.run(run(args.nodes, args.shards, args.window, changed))
        pct = {m: statistics.mean(x["core_pct"] for x in v) for m, v in r.items()}
        tick = {m: statistics.mean(x["tick_ms"] for x in v) for m, v in r.items()}
        print(
            f"| {100 * changed:g} % | {pct['floor']:.1f} % | {pct['rebuild']:.1f} % | "
            f"{pct['carried']:.1f} % | {tick['rebuild']:.1f} / {tick['carried']:.1f} ms |",
            flush=True,
        )
    print(f"# load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
