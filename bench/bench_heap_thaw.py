"""What connections that end after the heap froze leave resident, and what a thaw costs.

N canned loopback nodes in another process (``testkit.loopback.process``) and a
FleetRuntime here, on a clock this script moves forward. Once the fleet settled and the
heap froze, every node's link is cut on the server side; the runtime reconnects them
all. Then, in the same run:

* baseline (the heap left frozen, as before the thaw): Python memory still allocated
  after a full collection (tracemalloc, from before the runtime started), and how many
  of the old connections are still alive;
* the thaw (``HeapFreezer``'s scheduled collection after ``REFREEZE_MIN_S``): the same
  figures after it, what the ended links held (the difference), and how long the thaw
  held the interpreter (CPU time of its full collection, from ``gc.callbacks``).

    PYTHONPATH=. .venv/bin/python bench/bench_heap_thaw.py --nodes 300
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import time
import tracemalloc
import weakref
from typing import Any

from gpufleet.config import parse_config
from gpufleet.runtime import REFREEZE_MIN_S, FleetRuntime
from testkit.loopback.process import LoopbackProcess

MiB = 2**20


class ShiftedClock:
    """Wall-clock time plus an offset moved forward to bring the thaw due."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


class FullCollections:
    """CPU time of each full collection, from the collector's callbacks."""

    def __init__(self) -> None:
        self.ms: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.thread_time()
        else:
            self.ms.append((time.thread_time() - self._started) * 1000)


async def _until(condition: Any, within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"not within {within_s} s: {what}")
        await asyncio.sleep(0.1)


def _streaming(runtime: FleetRuntime) -> int:
    latest = runtime.latest()
    return 0 if latest is None else latest.nodes_streaming


def _held() -> float:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / MiB


async def main(nodes: int) -> None:
    clock = ShiftedClock()
    async with LoopbackProcess(nodes) as servers:
        targets = servers.targets()
        hosts = [target.name for target in targets]
        config = parse_config({"fleet": {"hosts": hosts, "expected_gpus": 8}})
        tracemalloc.start()
        runtime = FleetRuntime(config, targets, data_dir=None, clock=clock)
        await runtime.start()
        heap, state = runtime.heap, runtime._state
        await _until(lambda: heap.frozen_at is not None, 300, "the fleet settled")
        old = [weakref.ref(s.conn) for s in map(runtime._ssh.session, hosts) if s and s.conn]
        await servers.drop(hosts)
        await _until(
            lambda: state.connections_ended >= nodes and _streaming(runtime) == nodes,
            300,
            "every node reconnected",
        )
        frozen = _held()
        alive_frozen = sum(ref() is not None for ref in old)
        collections = FullCollections()
        gc.callbacks.append(collections)
        clock.offset += REFREEZE_MIN_S
        await _until(lambda: heap.refreezes == 1, 60, "the thaw")
        gc.callbacks.remove(collections)
        thawed = _held()
        alive_thawed = sum(ref() is not None for ref in old)
        await runtime.stop()
        tracemalloc.stop()
    held = frozen - thawed
    print(f"# {nodes} nodes, load {os.getloadavg()[0]:.2f}; Python memory (tracemalloc) after a "
          "full collection, every node's link cut after the freeze and back")  # fmt: skip
    print(f"heap left frozen (before)   {frozen:7.1f} MiB   old connections alive: "
          f"{alive_frozen} of {len(old)}")  # fmt: skip
    print(f"thawed (HeapFreezer)        {thawed:7.1f} MiB   old connections alive: "
          f"{alive_thawed} of {len(old)}")  # fmt: skip
    print(f"ratio thawed / frozen       {thawed / frozen:7.2f}")
    print(f"held by the ended links     {held:7.1f} MiB   {held * 1024 / nodes:.1f} KiB per node")
    print(f"the thaw's full collection  {max(collections.ms, default=0.0):7.1f} ms CPU "
          "(tracemalloc on: slower than without it)")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=300)
    asyncio.run(main(parser.parse_args().nodes))
