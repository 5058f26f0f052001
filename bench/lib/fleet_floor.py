"""The floor of bench/bench_fleet.py: the least a Python controller on our stack must do.

Connect to every node with asyncssh (our cipher preference, no compression), start the
agent's command, split what arrives into lines and decode each with msgspec into plain
values (untyped: dicts, lists, numbers), count the samples, and nothing else: no
validation, no state, no history, no /metrics. Whatever ``gpufleet serve`` spends above
this on the same traffic is ours to answer for; whatever this costs is the price of
receiving SSH and JSON in Python at all. The ratio of the two travels between machine
kinds where an absolute "% of a core" does not (the same CPU runs both, in the same
run, on the same node traffic).

    python bench/lib/fleet_floor.py --port P --key KEY --nodes N --progress FILE

Writes ``{"seen": n, "ingested": n, "failed": n, "bytes": n}`` to FILE every half second
from a thread, as fleet_naive.py does, and runs until stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import threading
from pathlib import Path
from typing import Any

import asyncssh
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from collectors.ssh.options import NO_COMPRESSION, PREFERRED_CIPHERS

_decode = msgspec.json.Decoder().decode


class Floor:
    """Counts what the sessions decoded; the only state the floor keeps."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.ingested = 0
        self.failed = 0
        self.bytes = 0


class LineSession(asyncssh.SSHClientSession[bytes]):
    """Bytes in, lines out, one msgspec decode per line."""

    def __init__(self, floor: Floor, node: str) -> None:
        self._floor = floor
        self._node = node
        self._partial = b""

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        floor = self._floor
        floor.bytes += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            try:
                message: Any = _decode(line)
            except msgspec.DecodeError:
                floor.failed += 1
                continue
            if message.get("type") == "sample":
                floor.ingested += 1
                floor.seen.add(self._node)


async def follow(floor: Floor, node: str, port: int, key: str, gate: asyncio.Semaphore) -> None:
    async with gate:
        conn = await asyncssh.connect(
            "127.0.0.1", port, username="bench", client_keys=[key], known_hosts=None,
            encryption_algs=list(PREFERRED_CIPHERS), compression_algs=list(NO_COMPRESSION),
        )  # fmt: skip
    async with conn:
        channel, _session = await conn.create_session(
            lambda: LineSession(floor, node), "python3 agent.pyz --interval 1.0", encoding=None
        )
        await channel.wait_closed()


def report(floor: Floor, progress: Path, stop: threading.Event) -> None:
    while not stop.wait(0.5):
        counts = {"seen": len(floor.seen), "ingested": floor.ingested}
        counts.update(failed=floor.failed, bytes=floor.bytes)
        # Whole or not at all: the bench reads this file while it is rewritten.
        scratch = progress.with_suffix(".tmp")
        scratch.write_text(json.dumps(counts))
        os.replace(scratch, progress)


async def run(port: int, key: str, nodes: int, progress: Path) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    floor = Floor()
    gate = asyncio.Semaphore(64)
    tasks = [
        asyncio.create_task(follow(floor, f"node-{i:05d}", port, key, gate))
        for i in range(1, nodes + 1)
    ]
    stop = threading.Event()
    threading.Thread(target=report, args=(floor, progress, stop), daemon=True).start()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--progress", type=Path, required=True)
    args = parser.parse_args()
    asyncio.run(run(args.port, args.key, args.nodes, args.progress))


if __name__ == "__main__":
    main()
