"""Where the controller's memory per SSH connection goes (tracemalloc, client side).

N canned loopback nodes in another process (``testkit.loopback.process``), an SshFleet
streaming from them at a 30 s interval (idle after the first sample, so no backlog is
measured), and tracemalloc's difference between before the fleet started and after
every node streamed, per connection, grouped by file, by line, and by traceback.

    PYTHONPATH=. .venv/bin/python bench/bench_ssh_memory.py --nodes 200
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tracemalloc

from collectors.bundle import agent_zipapp_bytes
from collectors.ssh import SshFleet, SshOptions
from testkit.loopback.process import LoopbackProcess
from testkit.loopback.recorder import UpdateRecorder

SETTLE_S = 2.0  # the connect burst's stragglers (a benchmark window, not synchronisation)


async def _streaming(fleet: SshFleet, recorder: UpdateRecorder, nodes: int) -> None:
    await fleet.start()
    await recorder.wait_until(lambda: len(recorder.first_sample_at) == nodes, 300)
    await asyncio.sleep(SETTLE_S)


async def main(nodes: int, top: int) -> None:
    bundle = agent_zipapp_bytes()
    async with LoopbackProcess(nodes) as servers:
        targets = servers.targets(interval=30.0)
        # One node first: the agent is uploaded once, outside the measurement.
        warm = UpdateRecorder()
        options = SshOptions(ssh_config=None, connect_timeout=60, agent_bundle=bundle)
        first = SshFleet(targets[:1], warm, options)
        await _streaming(first, warm, 1)
        await first.stop()
        gc.collect()
        tracemalloc.start(16)
        before = tracemalloc.take_snapshot()
        recorder = UpdateRecorder()
        options = SshOptions(ssh_config=None, connect_timeout=60, agent_bundle=bundle)
        fleet = SshFleet(targets, recorder, options)
        await _streaming(fleet, recorder, nodes)
        gc.collect()
        after = tracemalloc.take_snapshot()
        await fleet.stop()
    total = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    print(f"# {nodes} nodes, load {os.getloadavg()[0]:.2f}; "
          f"{total / 1024 / nodes:.1f} KiB of Python allocations per connection")  # fmt: skip
    for key in ("filename", "lineno"):
        print(f"--- by {key}: KiB and blocks per connection")
        for stat in after.compare_to(before, key)[:top]:
            print(f"{stat.size_diff / 1024 / nodes:8.2f} {stat.count_diff / nodes:7.1f}  "
                  f"{stat.traceback[0]}")  # fmt: skip
    for stat in after.compare_to(before, "traceback")[: top // 3]:
        print(f"=== {stat.size_diff / 1024 / nodes:.2f} KiB per connection")
        print("\n".join(stat.traceback.format()[-10:]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.nodes, args.top))
