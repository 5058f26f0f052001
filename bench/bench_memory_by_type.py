"""What the fleet state and its latest snapshot hold, by type, and how full pymalloc is.

N canned nodes (bench/lib/fleet_nodes.py's shape: 8 GPUs x 18 NVLinks, 8 IB ports, 1 NIC)
are decoded and ingested into a real ``FleetRuntime`` for ``--ticks`` ticks, half of
them before each tick and half after, as staggered nodes arrive; /metrics is rendered
every 15th tick. Then:

- the objects reachable from the snapshot, and from the state but not the snapshot,
  summed by type (``sys.getsizeof``; numpy arrays by ``nbytes``). What is held once per
  node though it is the same on every node shows here (the layouts
  and the NVLink rows were found this way);
- with ``--by-holder``, the same bytes by (holder, type): the holder is the nearest
  object above that is not a tuple, list, dict or scalar (``PortTrack>tuple`` is a tuple
  a PortTrack holds through a tuple), so a copy kept per GPU or port shows its owner;
- pymalloc's arenas: bytes in use against bytes held (``sys._debugmallocstats``), i.e.
  how much of the small-object heap is fragmentation.

    PYTHONPATH=. .venv/bin/python bench/bench_memory_by_type.py --nodes 1000
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.append(str(Path(__file__).resolve().parent / "lib"))  # fleet_nodes, fleet_tick

from fleet_nodes import CannedNode
from fleet_tick import BenchRuntime
from memory_account import _SKIP, _own_bytes, walk

from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from exporter.text import ExpositionRenderer
from gpufleet.config import Config

T0 = 1.8e9
MIB = 1 << 20
_ARENA_LINES = ("# arenas allocated current", "# bytes in allocated blocks", "Total ")


def by_type(root: object, seen: set[int]) -> tuple[Counter[str], Counter[str]]:
    """Bytes and objects by type reachable from ``root`` and not already in ``seen``."""
    tally: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
    walk(root, seen, tally)
    return tally


_PLAIN = frozenset(("tuple", "list", "dict", "int", "float", "str", "bytes", "set", "frozenset"))


def by_holder(root: object, seen: set[int]) -> tuple[Counter[str], Counter[str]]:
    """Bytes and objects by ``holder: type`` reachable from ``root``, not in ``seen``."""
    sizes: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    stack: list[tuple[object, str]] = [(root, type(root).__name__)]
    while stack:
        obj, holder = stack.pop()
        if id(obj) in seen or isinstance(obj, _SKIP):
            continue
        seen.add(id(obj))
        name = type(obj).__name__
        sizes[f"{holder}: {name}"] += _own_bytes(obj)
        counts[f"{holder}: {name}"] += 1
        if isinstance(obj, np.ndarray):
            continue
        below = holder + ">" + name if name in _PLAIN else name
        if below.count(">") > 2:  # deeper plain containers count for the one above
            below = holder
        stack.extend((child, below) for child in gc.get_referents(obj))
    return sizes, counts


def arena_stats() -> list[str]:
    """pymalloc's summary lines (``_debugmallocstats`` writes to C's stderr)."""
    read, write = os.pipe()
    saved = os.dup(2)
    os.dup2(write, 2)
    os.close(write)
    try:
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    text = os.read(read, 1 << 20).decode()
    os.close(read)
    return [line for line in text.splitlines() if line.startswith(_ARENA_LINES)][:3]  # 1st Total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=40)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--by-holder", action="store_true", help="bytes by (holder, type)")
    args = parser.parse_args()
    names = [f"node-{i:05d}" for i in range(1, args.nodes + 1)]
    runtime = BenchRuntime(
        Config(), [NodeTarget(name=n, host=n) for n in names], data_dir=None, clock=time.time
    )
    state = runtime._state
    nodes = list(zip(names, (CannedNode(i, 8, 8, 1.0) for i in range(args.nodes)), strict=True))
    for name, node in nodes:
        state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))
    renderer = ExpositionRenderer()
    half = len(nodes) // 2
    snapshot: Any = None
    for k in range(1, args.ticks + 1):
        t = T0 + k
        for name, node in nodes[:half]:
            state.ingest(NodeMessage(name, decode_line(node.sample(t)), t + 0.01))
        snapshot = runtime.tick(t + 0.5)
        for name, node in nodes[half:]:
            state.ingest(NodeMessage(name, decode_line(node.sample(t)), t + 0.6))
        if k % 15 == 0:
            renderer.render(snapshot)
    seen: set[int] = set()
    tally = by_holder if args.by_holder else by_type
    derived = (runtime.drift, runtime.link_events, runtime.xid_repeats)
    for label, root in (
        ("latest snapshot", snapshot),
        ("state, not in the snapshot", state),
        ("drift, link events, XID repeats", derived),
    ):
        sizes, counts = tally(root, seen)
        total = sum(sizes.values()) / MIB
        print(f"== {label}: {total:.1f} MiB, {sum(counts.values()):,} objects")
        for name, size in sizes.most_common(args.top):
            print(f"  {size / MIB:7.2f} MiB {counts[name]:9,}  {name}")
    gc.collect()
    status = Path("/proc/self/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    print(f"RSS {rss:.1f} MiB; pymalloc:")
    for line in arena_stats():
        print(f"  {line}")


if __name__ == "__main__":
    main()
