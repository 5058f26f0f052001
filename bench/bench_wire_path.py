"""Our own cost per node line on the SSH side, without SSH, against an earlier tree.

Everything between asyncssh and the fleet's sink: the agent channel splitting a read
into lines, the fleet's line pacer, the node session (decode, status, envelope) and a
counting sink. N nodes each get one canned 1 Hz sample (8 GPUs, 8 IB ports, ~920 B) per
round, as one read each, the way asyncssh hands a packet's data to the channel; the
event loop then drains the pacer. CPU time of the process, best of several rounds.

The baseline is the same measurement run on the tree at commit e80ac40 (collectors
and testkit before the one-scan decoder; ``--baseline f7b051d`` measures the tree after
it), exported with ``git archive`` to a temporary directory, each side in its own subprocess,
interleaved, so both see the same machine.

    PYTHONPATH=. .venv/bin/python bench/bench_wire_path.py --nodes 1000 --rounds 20
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

BASELINE_COMMIT = "e80ac40"
ROOT = Path(__file__).resolve().parents[1]


async def per_line_us(nodes: int, rounds: int) -> dict[str, float]:
    """CPU µs per line through channel, pacer, session and sink; and decode alone."""
    # Imported here: the worker runs against whichever tree PYTHONPATH names.
    from collectors.protocol import decode_line
    from collectors.ssh.node import NodeSession
    from collectors.ssh.options import SshOptions
    from collectors.ssh.pacing import LinePacer
    from collectors.ssh.stream import AgentChannel
    from collectors.ssh.target import NodeTarget
    from collectors.updates import NodeMessage, NodeUpdate
    from testkit.loopback.canned import SampleMaker, hello_line

    received = 0
    expected = 0
    drained = asyncio.Event()

    def sink(update: NodeUpdate) -> None:
        nonlocal received
        if isinstance(update, NodeMessage):  # status changes are not lines
            received += 1
            if received >= expected:
                drained.set()

    pacer = LinePacer()
    options = SshOptions(ssh_config=None, agent_bundle=("agent.pyz", b""))
    gate = asyncio.Semaphore(1)
    channels = []
    for i in range(nodes):
        target = NodeTarget(name=f"node-{i:04d}", host="127.0.0.1")
        session = NodeSession(target, sink, options, ("agent.pyz", b""), gate, time.time, pacer)
        channel = AgentChannel(session._on_line, pacer)
        session._channel = channel
        channels.append(channel)
    line = SampleMaker(8).line(time.time())

    async def one_round(reads: tuple[bytes, ...] = (line,)) -> None:
        nonlocal expected
        expected = received + len(channels) * len(reads)
        drained.clear()
        for channel in channels:
            for data in reads:
                channel.data_received(data, None)
        await drained.wait()  # the pacer drains slice by slice, as in the controller

    # The hellos, and every node's first status change, before the measured rounds.
    await one_round((hello_line("node", 8, time.time()), line))
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        await one_round()
        best = min(best, time.process_time() - start)
    bare = line.rstrip(b"\n")
    decode = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(nodes):
            decode_line(bare)
        decode = min(decode, time.process_time() - start)
    return {"path_us": best / nodes * 1e6, "decode_us": decode / nodes * 1e6}


def _baseline_tree(into: Path, commit: str) -> Path:
    archive = subprocess.run(
        ["git", "archive", commit, "collectors", "testkit"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def _worker(tree: Path, nodes: int, rounds: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", "--nodes", str(nodes), "--rounds", str(rounds)],
        env=env, cwd=tree, capture_output=True, check=True, text=True,
    ).stdout  # fmt: skip
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs of each side")
    parser.add_argument(
        "--baseline", default=BASELINE_COMMIT, help="the commit measured beside this tree"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(asyncio.run(per_line_us(args.nodes, args.rounds))))
        return
    with tempfile.TemporaryDirectory(prefix="bench-wire-") as tmp:
        base = _baseline_tree(Path(tmp), args.baseline)
        ours: dict[str, float] = {}
        theirs: dict[str, float] = {}
        for _ in range(args.repeat):
            for side, tree in ((ours, ROOT), (theirs, base)):
                for key, value in _worker(tree, args.nodes, args.rounds).items():
                    side[key] = min(side.get(key, float("inf")), value)
    load = os.getloadavg()[0]
    print(f"# {args.nodes} nodes, best of {args.rounds} rounds x {args.repeat} runs; "
          f"load {load:.2f}; baseline {args.baseline}")  # fmt: skip
    print(f"{'CPU µs per line':<34} {'ours':>7} {args.baseline[:7]:>7} {'ratio':>6}")
    rows = (
        ("channel+pacer+session+sink", "path_us"),
        ("  of which decode_line", "decode_us"),
    )
    for label, key in rows:
        print(f"{label:<34} {ours[key]:>7.2f} {theirs[key]:>7.2f} {ours[key] / theirs[key]:>5.2f}x")
    rest_ours = ours["path_us"] - ours["decode_us"]
    rest_theirs = theirs["path_us"] - theirs["decode_us"]
    print(f"{'  the rest (our transport code)':<34} {rest_ours:>7.2f} {rest_theirs:>7.2f} "
          f"{rest_ours / rest_theirs:>5.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
