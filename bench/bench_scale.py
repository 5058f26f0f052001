"""Scale-out, measured: N shard processes on a real nats-server, one attached viewer.

Runs, in one go on this machine:
  * a loopback fleet of canned nodes (8 GPUs + 8 IB ports, one sample per interval) in
    its own process, so the shards' CPU is theirs alone;
  * ``nats-server`` (Debian) on loopback;
  * N ``gpufleet serve --shard K/N`` processes, first **without** NATS (baseline: a
    shard as a plain collector), then **with** NATS (summaries + event log + request
    service), over the same nodes and window;
  * an ``AttachedFleet`` viewer in this process: time to attach and show every node,
    its CPU, the bytes it takes from NATS, and the age of each shard's summary when it
    first reaches a viewer snapshot (a node's verdict reaching the dashboard).
Also, in-process: bytes and encode/decode time of one 1,000-node summary against the
obvious baseline, every NodeSnapshot as a JSON object; and the viewer's tick against
the previous board that converted every node every tick (``bench/lib/scale_viewer.py``).

Per shard CPU per 1,000 node-messages counts messages as nodes x window / interval
(canned nodes send exactly one sample per interval).

    PYTHONPATH=. .venv/bin/python bench/bench_scale.py --nodes 1000 --shards 4 --window 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec

sys.path.append(
    str(Path(__file__).resolve().parent / "lib")
)  # scale_viewer, after PYTHONPATH's tree

import scale_viewer

from cluster.attach import AttachedFleet
from cluster.natsd import start_nats_server
from cluster.shards import assign
from cluster.wire import decode_summary, summarize
from fleet.model import FleetSnapshot
from gpufleet.shard import write_targets_file
from testkit.loopback.process import LoopbackProcess
from testkit.ports import free_port
from testkit.synthetic_history import snapshot as synthetic

TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@asynccontextmanager
async def shards(
    count: int, config: Path, targets: Path, data: Path, nats: list[str | None]
) -> AsyncIterator[list[tuple[asyncio.subprocess.Process, int]]]:
    """Shard K of ``count`` publishes to ``nats[K-1]`` (None: a plain collector)."""
    procs = []
    for k in range(1, count + 1):
        port = free_port()
        argv = [sys.executable, "-m", "gpufleet", "serve", "-c", str(config)]
        argv += ["--data-dir", str(data), "--shard", f"{k}/{count}"]
        argv += ["--targets-file", str(targets), "--metrics-addr", f"127.0.0.1:{port}"]
        url = nats[k - 1]
        argv += ["--log-level", "warning"] + (["--nats-url", url] if url else [])
        with (data / f"shard-{k}.log").open("ab") as log:
            proc = await asyncio.create_subprocess_exec(*argv, stdout=log, stderr=log)
        procs.append((proc, port))
    try:
        yield procs
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            await proc.wait()


def metrics_lines(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        body = response.read().decode()
    return sum(1 for line in body.splitlines() if line and not line.startswith("#"))


def streaming_nodes(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        body = response.read().decode()
    return sum(
        1
        for line in body.splitlines()
        if line.startswith("gpufleet_node_up{") and line.endswith(" 1")
    )


async def wait_streaming(procs: list[tuple[asyncio.subprocess.Process, int]], total: int) -> float:
    started = time.monotonic()
    while True:
        counts = []
        for _, port in procs:
            try:
                counts.append(await asyncio.to_thread(streaming_nodes, port))
            except OSError:
                counts.append(0)
        if sum(counts) >= total:
            return time.monotonic() - started
        if time.monotonic() - started > 600:
            raise RuntimeError(f"only {sum(counts)} of {total} nodes streaming")
        await asyncio.sleep(1.0)  # polling the shards' /metrics, bounded above


async def measure_shards(pids: list[int], window: float) -> list[float]:
    """CPU seconds each shard process used during ``window``."""
    before = [process_cpu(pid) for pid in pids]
    await asyncio.sleep(window)  # the measuring window itself
    return [process_cpu(pid) - b for pid, b in zip(pids, before, strict=True)]


def wire_baseline(nodes: int) -> dict[str, float]:
    """Bytes and CPU of one summary: ours vs the full NodeSnapshots as JSON (msgspec)."""
    snap: FleetSnapshot = synthetic(time.time(), nodes, 8)
    parts = summarize(1, 1, 1, 1.0, snap.nodes, snap.taken_at)
    baseline = msgspec.json.encode(snap.nodes)
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        summarize(1, 1, 1, 1.0, snap.nodes, snap.taken_at)
    t1 = time.perf_counter()
    for _ in range(reps):
        msgspec.json.encode(snap.nodes)
    t2 = time.perf_counter()
    for _ in range(reps):
        for part in parts:
            decode_summary(part)
    t3 = time.perf_counter()
    for _ in range(reps):
        msgspec.json.decode(baseline)
    t4 = time.perf_counter()
    return {
        "ours_b_per_node": sum(map(len, parts)) / nodes,
        "json_b_per_node": len(baseline) / nodes,
        "ours_encode_ms": 1000 * (t1 - t0) / reps,
        "json_encode_ms": 1000 * (t2 - t1) / reps,
        "ours_decode_ms": 1000 * (t3 - t2) / reps,
        "json_decode_ms": 1000 * (t4 - t3) / reps,
    }


async def main(nodes: int, count: int, window: float, interval: float) -> None:
    print(f"# {nodes} canned nodes, {count} shards publishing to NATS and {count} shards not"
          f" (baseline), all at once; interval {interval} s, window {window} s")  # fmt: skip
    wire = wire_baseline(1000)
    print(
        "summary of 1,000 nodes: ours {ours_b_per_node:.0f} B/node, encode {ours_encode_ms:.1f}"
        " ms, decode {ours_decode_ms:.1f} ms | full snapshots as JSON {json_b_per_node:.0f}"
        " B/node, encode {json_encode_ms:.1f} ms, decode {json_decode_ms:.1f} ms".format(**wire),
        flush=True,
    )
    for changed in (0.01, 1.0):
        naive, ours = scale_viewer.run(nodes, count, 6, changed)
        print(f"viewer tick at {nodes} nodes, {100 * changed:g} % changed per tick: previous"
              f" board {naive:.1f} ms, ShardBoard {ours:.1f} ms, {naive / ours:.1f}x",
              flush=True)  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    nats = await start_nats_server(tmp / "nats")
    try:
        async with LoopbackProcess(nodes) as fleet:
            targets = fleet.targets(interval=interval, slow_interval=interval * 10)
            names = [t.name for t in targets]
            # Shards 1..count publish, count+1..2*count do not: the same machine load for both.
            per_shard = [len(v) for v in assign(names, 2 * count).values()]
            write_targets_file(tmp / "targets.json", targets)
            config = tmp / "config.toml"
            config.write_text(
                f"[fleet]\nhosts = {json.dumps(names[:1])}\ninterval = {interval}\n"
                f"max_concurrent_connects = 32\n[history]\nflush_interval_s = 30\n"
            )
            urls: list[str | None] = [nats.url] * count + [None] * count
            async with shards(2 * count, config, tmp / "targets.json", tmp, urls) as procs:
                ready_s = await wait_streaming(procs, nodes)
                print(f"# every node streaming after {ready_s:.1f} s", flush=True)
                pids = [p.pid for p, _ in procs]
                published = sum(per_shard[:count])
                attach, cpu = await attach_viewer(nats.url, published, interval, window, pids)
                rss = [rss_mib(pid) for pid in pids]
                series = await asyncio.to_thread(metrics_lines, procs[0][1])
            report(per_shard, cpu, rss, attach, series, window, interval, wire, count)
    except BaseException:
        print(f"# kept {tmp} (shard logs) for a look", file=sys.stderr)
        raise
    finally:
        await nats.stop()
    shutil.rmtree(tmp, ignore_errors=True)


async def attach_viewer(
    url: str, nodes: int, interval: float, window: float, pids: list[int]
) -> tuple[dict[str, float], list[float]]:
    viewer = AttachedFleet(url, tick_s=interval)
    ages: list[float] = []
    ticks: list[float] = []
    last_seq: dict[tuple[int, int], int] = {}

    def on_snapshot(snapshot: FleetSnapshot) -> None:
        ticks.append(snapshot.taken_at)
        for k, seen in viewer.board.shards.items():  # per (shard, part)
            if last_seq.get(k) != seen.summary.seq:
                last_seq[k] = seen.summary.seq
                ages.append(snapshot.taken_at - seen.summary.taken_at)

    t0 = time.monotonic()
    await viewer.start()
    while True:
        snap = viewer.latest()
        if snap is not None and snap.nodes_streaming == nodes:
            break
        await asyncio.sleep(0.05)  # polling the viewer, bounded by the shards being ready
    attach_s = time.monotonic() - t0
    viewer.subscribe(on_snapshot)
    bytes0, cpu0, wall0 = viewer.received_bytes, self_cpu(), time.monotonic()
    converted0 = viewer.board.conversions
    shard_cpu = await measure_shards(pids, window)
    cpu1, wall1 = self_cpu(), time.monotonic()
    received = viewer.received_bytes - bytes0
    converted = viewer.board.conversions - converted0
    await viewer.stop()
    ages.sort()
    return {
        "attach_s": attach_s,
        "viewer_core_pct": 100 * (cpu1 - cpu0) / (wall1 - wall0),
        "bytes_per_node_s": received / nodes / (wall1 - wall0),
        "converted_per_tick": converted / max(1, len(ticks)),
        "p50_s": statistics.median(ages) if ages else float("nan"),
        "p99_s": ages[min(len(ages) - 1, int(0.99 * len(ages)))] if ages else float("nan"),
    }, shard_cpu


def report(  # type: ignore[no-untyped-def]
    per_shard, cpu, rss, attach, series, window, interval, wire, count
) -> None:
    def ms_per_k(shards: slice) -> float:
        messages = sum(per_shard[shards]) * window / interval
        return 1e6 * sum(cpu[shards]) / max(1.0, messages)  # CPU ms per 1,000 messages

    ours, base = slice(0, count), slice(count, 2 * count)
    o, b = ms_per_k(ours), ms_per_k(base)
    pct = [100 * c / window for c in cpu]
    print("| measure | shards publishing to NATS | shards not publishing (baseline) | ratio |")
    print("|---|---|---|---|")
    print(f"| shard CPU per 1,000 node-messages | {o:.0f} ms | {b:.0f} ms | {o / b:.2f}x |")
    print(f"| shard CPU, % of a core (each) | {', '.join(f'{c:.0f}' for c in pct[ours])} |"
          f" {', '.join(f'{c:.0f}' for c in pct[base])} | |")  # fmt: skip
    print(f"| shard RSS, MiB (each) | {', '.join(f'{r:.0f}' for r in rss[ours])} |"
          f" {', '.join(f'{r:.0f}' for r in rss[base])} | |")  # fmt: skip
    ratio = wire["json_b_per_node"] / wire["ours_b_per_node"]
    print(f"| NATS summary bytes per node per second | {attach['bytes_per_node_s']:.0f} B | | "
          f"full snapshot as JSON: {ratio:.1f}x more |")  # fmt: skip
    print(
        f"| viewer CPU attached to all shards | {attach['viewer_core_pct']:.1f} % of a core | | |"
    )
    print(f"| nodes converted per viewer tick | {attach['converted_per_tick']:.1f} of"
          f" {sum(per_shard[:count])} | | |")  # fmt: skip
    print(f"| viewer attach → every node shown | {attach['attach_s']:.2f} s | | |")
    print(f"| shard tick → viewer snapshot, p50 / p99 | {attach['p50_s']:.2f} / "
          f"{attach['p99_s']:.2f} s | | |")  # fmt: skip
    print(f"| /metrics series per node (shard 1) | {series / max(1, per_shard[0]):.0f} | | |")
    print(f"# nodes per shard {per_shard}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(main(args.nodes, args.shards, args.window, args.interval))
