"""CPU per /metrics render of this tree against another revision, render by render.

On a shared machine a process's CPU time per render moves with what else runs (another
process on a sibling hyperthread, a cache flushed), by up to 2x within a minute. Here
both trees are loaded in their own process at once, each with its own snapshots of the
same canned fleet (bench/lib/metrics_probe.py: 8 GPUs, 8 IB ports, 1 NIC per node, every
value moving every tick), and they render in turn, one steady render each, so both see
the same conditions; the figure is the fastest and the median of each, and their ratio.
Each render reads a snapshot no render has read yet (what a node's rows build lazily is
built once per snapshot, as in ``serve``).

    PYTHONPATH=. .venv/bin/python bench/tools/metrics_ab.py --before a739b4d --nodes 1000
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_WORKER = """
import gc, json, sys, time
sys.path.insert(0, sys.argv[4])  # the tree first: ahead of the working directory ('' for -c)
sys.path.append(sys.argv[2])
from metrics_probe import snapshots
from exporter.text import ExpositionRenderer
count, ticks = int(sys.argv[1]), int(sys.argv[3])
assert sys.modules["exporter.text"].__file__.startswith(sys.argv[4]), "not the tree"
snaps = snapshots(count, ticks)
gc.freeze()
gc.set_threshold(20_000, *gc.get_threshold()[1:])
renderer = ExpositionRenderer()
for snapshot in snaps[:2]:
    b"".join(renderer.stream_parts(snapshot))
print("ready", flush=True)
for k, line in enumerate(sys.stdin, start=2):
    snapshot = snaps[k]
    snaps[k] = None  # dropped once rendered, as the runtime drops an old snapshot
    started = time.process_time()
    size = sum(map(len, renderer.stream_parts(snapshot)))
    print(json.dumps([time.process_time() - started, size]), flush=True)
"""


def _start(tree: Path, nodes: int, ticks: int) -> subprocess.Popen[str]:
    lib = str(ROOT / "bench" / "lib")
    command = [sys.executable, "-c", _WORKER, str(nodes), lib, str(ticks), str(tree)]
    worker = subprocess.Popen(
        command,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    if worker.stdout.readline().strip() != "ready":
        raise RuntimeError(f"the worker for {tree} did not start")
    return worker


def _render_once(worker: subprocess.Popen[str]) -> tuple[float, int]:
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write("go\n")
    worker.stdin.flush()
    cpu, size = json.loads(worker.stdout.readline())
    return float(cpu), int(size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", required=True)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--renders", type=int, default=20, help="steady renders of each")
    args = parser.parse_args()
    args.ticks = args.renders + 2  # every render a snapshot no render has read, as at 1 Hz
    with tempfile.TemporaryDirectory(prefix="metrics-ab-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.before], capture_output=True, check=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        workers = {
            "before": _start(Path(tmp), args.nodes, args.ticks),
            "after": _start(ROOT, args.nodes, args.ticks),
        }
        loads = [os.getloadavg()[0]]
        cpu: dict[str, list[float]] = {name: [] for name in workers}
        sizes: dict[str, int] = {}
        for _ in range(args.renders):
            for name, worker in workers.items():
                spent, sizes[name] = _render_once(worker)
                cpu[name].append(spent)
        loads.append(os.getloadavg()[0])
        for worker in workers.values():
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait()
    print(
        f"/metrics steady render, {args.nodes} nodes, {args.renders} renders each, in turn;"
        f" load {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs"
    )
    for name, spent in cpu.items():
        label = f"{name} ({args.before})" if name == "before" else f"{name} (this tree)"
        print(
            f"  {label:22s} CPU fastest {1000 * min(spent):6.1f} ms, median"
            f" {1000 * statistics.median(spent):6.1f} ms; body {sizes[name] / 2**20:.1f} MiB"
        )
    fastest = min(cpu["before"]) / min(cpu["after"])
    median = statistics.median(cpu["before"]) / statistics.median(cpu["after"])
    print(f"ratio before / after: fastest {fastest:.2f}x, median {median:.2f}x")


if __name__ == "__main__":
    main()
