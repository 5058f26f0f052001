"""Runs the real ``gpufleet`` CLI with measuring hooks, for bench/bench_fleet.py.

    python bench/fleet_probe.py STATS.json -- serve -c fleet.toml ...

Before handing ``argv`` to :func:`gpufleet.cli.main` it adds, without changing any
product code path:

- a ``gc.callbacks`` timer (every collection's pause, by generation);
- a snapshot listener, subscribed when the runtime starts, that notes each node's new
  sample (``NodeSnapshot.sampled_at`` is the node's own send time) and the tick's
  ``taken_at``: sample -> snapshot latency and samples that reached a snapshot.

It rewrites ``STATS.json.progress`` every few ticks (ticks, nodes streaming) so the
bench can wait for the fleet, and writes ``STATS.json`` when the CLI returns.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from array import array
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fleet.model import FleetSnapshot
from fleet.runtime import FleetRuntime
from gpufleet.cli import main


class GcPauses:
    """Every collection's wall time and thread CPU time, from ``gc.callbacks``.

    On a busy shared machine the wall time includes time the process was not running.
    """

    def __init__(self) -> None:
        self.started = (0.0, 0.0)
        self.pauses: list[tuple[float, int, float, float]] = []  # (at, gen, wall, cpu)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.started = (time.perf_counter(), time.thread_time())
        else:
            wall = time.perf_counter() - self.started[0]
            cpu = time.thread_time() - self.started[1]
            self.pauses.append((time.time(), info["generation"], wall, cpu))


class SnapshotProbe:
    """Latency of each new sample to the first snapshot that shows it."""

    def __init__(self, progress: Path) -> None:
        self.progress = progress
        self.seen: dict[str, float | None] = {}
        self.sample_t = array("d")  # send time of each sample that reached a snapshot
        self.latency = array("d")  # taken_at - send time
        self.ticks = array("d")  # taken_at of each snapshot
        self.tick_cost = array("d")  # wall seconds between ticks

    def __call__(self, snapshot: FleetSnapshot) -> None:
        taken = snapshot.taken_at
        self.ticks.append(taken)
        seen = self.seen
        for node in snapshot.nodes:
            sent = node.sampled_at
            if sent is not None and seen.get(node.name) != sent:
                seen[node.name] = sent
                self.sample_t.append(sent)
                self.latency.append(taken - sent)
        if len(self.ticks) % 5 == 0:
            streaming = snapshot.nodes_streaming
            self.progress.write_text(json.dumps({"ticks": len(self.ticks), "streaming": streaming}))


def run(stats_path: Path, argv: list[str]) -> int:
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    probe = SnapshotProbe(stats_path.with_suffix(".progress"))
    start = FleetRuntime.start

    async def start_probed(self: FleetRuntime) -> None:
        self.subscribe(probe)
        await start(self)

    FleetRuntime.start = start_probed  # type: ignore[method-assign]
    status = main(argv)
    stats = {
        "status": status,
        "gc": pauses.pauses,
        "sample_t": list(probe.sample_t),
        "latency": list(probe.latency),
        "ticks": list(probe.ticks),
    }
    stats_path.write_text(json.dumps(stats))
    return status


if __name__ == "__main__":
    sep = sys.argv.index("--")
    sys.exit(run(Path(sys.argv[1]), sys.argv[sep + 1 :]))
