"""What a full collection scans once the fleet has settled, in one process without SSH.

A real ``FleetRuntime`` is fed N canned nodes (bench/lib/fleet_nodes.py: 8 GPUs, 8 IB
ports and a NIC, every value moving each tick, a slow sample with every port's hw
counters every tenth tick), with bench/bench_fleet.py's traffic (a jobs message per node
every 300 ticks, staggered; an application XID per node-hour) and /metrics rendered
every 15th tick, as a scrape would (``--bare``: samples only). The runtime's own heap
freezer is left out: the bench collects and freezes where the runtime would, so each
pause is measured whole.

- The settle: every node says hello and 7 ticks run, then a full collection and a
  freeze, as when the fleet settles, timed as if nothing had been frozen in steps while
  the fleet connected (every session's tracks are scanned; the runtime's steps scan a
  sixteenth at a time).
- The schedule: ``FULL_COLLECT_S`` more ticks under the runtime's thresholds (no
  automatic full collection), then the old generation that is not frozen (what the
  scheduled full collection scans), by type, and that collection's CPU time (the
  first, and the best of three).
- What one tick leaves tracked: with automatic collection off, a steady tick and a
  slow tick are run, a young collection follows, and what survived it is counted by
  type (promoted, and scanned by the next full collection unless it dies first).

Counts do not depend on the machine's load; times do (give ``uptime``). Run it against
two trees of ``fleet`` for before/after in the same sitting:

    PYTHONPATH=. .venv/bin/python bench/bench_gc_tracked.py --nodes 1000 3000
    PYTHONPATH=/tmp/before:. .venv/bin/python bench/bench_gc_tracked.py --nodes 3000
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gpufleet.runtime
from bench.lib.fleet_nodes import CannedNode
from bench.lib.fleet_tick import SCRAPE_EVERY, T0, BenchRuntime
from collectors.protocol import decode_line
from collectors.ssh.target import NodeTarget
from collectors.updates import NodeMessage
from exporter.text import ExpositionRenderer
from gpufleet.config import Config

SLOW_EVERY = 10  # CannedNode sends a slow sample when seq % 10 == 1
# bench/lib/fleet_nodes.py's defaults: a jobs message every 300 s, an XID per node-hour.
JOBS_EVERY = 300  # ticks between a node's jobs messages, staggered across nodes
XID_EVERY = 3600  # one node in this many sends an XID each tick


class _HeapLeftAlone:
    """In place of the runtime's HeapFreezer: the bench collects and freezes itself, as
    the runtime would, at the points it measures."""

    def observe(self, *_args: object, **_kwargs: object) -> None:
        return None


def _type_name(obj: object) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def _by_type(objs: list[Any], top: int) -> list[tuple[str, int]]:
    return collections.Counter(map(_type_name, objs)).most_common(top)


class Fleet:
    """N canned nodes and the runtime they feed, one tick at a time."""

    def __init__(self, nodes: int, bare: bool) -> None:
        self.bare = bare
        self.renderer = ExpositionRenderer()
        self.names = [f"node-{i:05d}" for i in range(1, nodes + 1)]
        targets = [NodeTarget(name=n, host=n) for n in self.names]
        data_dir = Path(tempfile.mkdtemp(prefix="bench-gc-"))
        self.runtime = BenchRuntime(Config(), targets, data_dir=data_dir, clock=lambda: T0)
        self.state = self.runtime._state  # fed directly, no SSH
        self.runtime.heap = _HeapLeftAlone()  # type: ignore[assignment]
        self.nodes = [CannedNode(i, 8, 8, 1.0) for i in range(nodes)]
        self.k = 0

    def hello(self) -> None:
        """Every node's session starts: its tracks are built."""
        for name, node in zip(self.names, self.nodes, strict=True):
            self.state.ingest(NodeMessage(name, decode_line(node.hello(T0)), T0))

    def tick(self) -> None:
        self.k += 1
        t = T0 + self.k
        for name, node in zip(self.names, self.nodes, strict=True):
            for line in self._lines(node, t):
                self.state.ingest(NodeMessage(name, decode_line(line), t + 0.01))
        snapshot = self.runtime.tick(t + 0.5)
        if not self.bare and self.k % SCRAPE_EVERY == 0:
            self.renderer.render(snapshot)

    def _lines(self, node: CannedNode, t: float) -> list[bytes]:
        lines = [node.sample(t)]
        if self.bare:
            return lines
        if (node.k + self.k) % JOBS_EVERY == 0:
            lines.append(node.jobs(t))
        if (node.k + self.k * 7) % XID_EVERY == 0:
            lines.append(node.event(t, (node.k % 8) / 8))
        return lines

    def tick_until_slow_next(self, slow: bool) -> None:
        """Tick until the next tick is slow (``slow``) or steady."""
        while ((self.k + 1) % SLOW_EVERY == 1) != slow:
            self.tick()


def _full_collect_ms() -> tuple[float, float]:
    """The first full collection's CPU time, and the least of three, in ms."""
    times = []
    for _ in range(3):
        t0 = time.thread_time()
        gc.collect()
        times.append(time.thread_time() - t0)
    return round(times[0] * 1000, 1), round(min(times) * 1000, 1)


def _tick_survivors(fleet: Fleet, slow: bool, top: int) -> dict[str, Any]:
    """What one tick leaves tracked after a young collection (automatic collection off)."""
    fleet.tick_until_slow_next(slow)
    gc.collect()
    gc.disable()
    try:
        fleet.tick()
        gc.collect(0)
        survivors = gc.get_objects(1)
    finally:
        gc.enable()
    return {
        "survivors": len(survivors),
        "per_node": round(len(survivors) / len(fleet.nodes), 1),
        "by_type": _by_type(survivors, top),
    }


def run(nodes: int, ticks: int, top: int, bare: bool) -> dict[str, Any]:
    gc.collect()
    fleet = Fleet(nodes, bare)
    gc.freeze()  # as start() does first
    gc.set_threshold(*gpufleet.runtime.gc_thresholds(gc.get_threshold()))
    fleet.hello()
    for _ in range(7):
        fleet.tick()
    at_settle = gc.get_objects()
    settle = {"scanned": len(at_settle), "by_type": _by_type(at_settle, top)}
    del at_settle
    t0 = time.thread_time()
    gc.collect()
    gc.freeze()  # the settle's collection and freeze (no freeze in steps before it)
    settle_ms = (time.thread_time() - t0) * 1000
    for _ in range(ticks):
        fleet.tick()
    old = gc.get_objects(2)
    census = {"old_unfrozen": len(old), "by_type": _by_type(old, top)}
    del old
    first_ms, best_ms = _full_collect_ms()
    alive = len(gc.get_objects())  # after the collection: what the state keeps
    result = {
        "nodes": nodes,
        "bare": bare,
        "ticks_after_settle": ticks,
        "settle_collect_ms": round(settle_ms, 1),
        "settle": settle,
        "census": census,
        "full_collect_ms_first": first_ms,
        "full_collect_ms_best_of_3": best_ms,
        "tracked_alive_after_full": alive,
        "tracked_alive_per_node": round(alive / nodes, 1),
        "steady_tick": _tick_survivors(fleet, slow=False, top=top),
        "slow_tick": _tick_survivors(fleet, slow=True, top=top),
    }
    gc.unfreeze()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument(
        "--ticks",
        type=int,
        default=int(gpufleet.runtime.FULL_COLLECT_S),
        help="ticks between the settle and the full collection (the runtime's schedule)",
    )
    parser.add_argument("--top", type=int, default=15, help="types listed")
    parser.add_argument("--bare", action="store_true", help="samples only: no jobs, XIDs, scrapes")
    args = parser.parse_args()
    for nodes in args.nodes:
        _show(run(nodes, args.ticks, args.top, args.bare))


def _show(result: dict[str, Any]) -> None:
    """One line of figures, then each census by type, one type a line."""
    tables = {
        "the settle's collection (nothing frozen since start)": result["settle"],
        "old generation, not frozen": result["census"],
        "a steady tick's survivors of a young collection": result["steady_tick"],
        "a slow tick's survivors of a young collection": result["slow_tick"],
    }
    head = {
        k: v for k, v in result.items() if k not in ("settle", "census", "steady_tick", "slow_tick")
    }
    head["settle_scanned"] = result["settle"]["scanned"]
    head["old_unfrozen"] = result["census"]["old_unfrozen"]
    head["steady_tick_survivors"] = result["steady_tick"]["survivors"]
    head["slow_tick_survivors"] = result["slow_tick"]["survivors"]
    print(json.dumps(head))
    for title, table in tables.items():
        print(f"  {title}:")
        for name, count in table["by_type"]:
            print(f"    {count:>8} {name}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
