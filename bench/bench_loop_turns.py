"""What waking the event loop for every node's packet costs (gpufleet/event_loop.py).

A sender process opens N TCP connections on loopback to this process and writes a
``--bytes`` line on each once a second, every connection at its own phase of the
second (as nodes do). This process reads them with an asyncio protocol that only
counts lines, on the default event loop and on gpufleet's paced loop, alternately,
``--window`` seconds each: the receiver's CPU (``time.process_time``), its waits for
I/O, and the delay from a line's send time to its read (p99). No SSH and no decoding:
what differs is the loop's turns only.

    PYTHONPATH=. .venv/bin/python bench/bench_loop_turns.py --nodes 1000 --window 20
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import selectors
import socket
import statistics
import time
from collections.abc import Callable

from gpufleet.event_loop import PacedSelector

_STAMP = 17  # "1800000000.123456": the send time, as text (a packed double may hold "\n")


def _sender(port: int, nodes: int, size: int, seconds: float) -> None:
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(nodes)]
    phases = sorted((random.random(), i) for i in range(nodes))
    pad = b"x" * max(0, size - _STAMP - 1)
    start = time.time() + 1.0
    for second in range(int(seconds)):
        for phase, i in phases:
            at = start + second + phase
            delay = at - time.time()
            if delay > 0:
                time.sleep(delay)
            socks[i].sendall(b"%17.6f" % time.time() + pad + b"\n")
    for s in socks:
        s.close()


class _Counter(asyncio.Protocol):
    def __init__(self, delays: list[float]) -> None:
        self.delays = delays
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        now = time.time()
        for line in lines:
            self.delays.append(now - float(line[:_STAMP]))


async def _receive(nodes: int, size: int, window: float) -> tuple[float, int, float, int]:
    loop = asyncio.get_running_loop()
    delays: list[float] = []
    accepted = asyncio.Event()
    count = 0

    def factory() -> asyncio.Protocol:
        nonlocal count
        count += 1
        if count == nodes:
            accepted.set()
        return _Counter(delays)

    server = await loop.create_server(factory, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sender = multiprocessing.Process(target=_sender, args=(port, nodes, size, window + 3))
    sender.start()
    await accepted.wait()
    await asyncio.sleep(2.0)  # the first second of lines: warm-up, not measured
    selector = getattr(loop, "_selector", None)
    waits = getattr(selector, "waits", 0)
    delays.clear()
    started = time.process_time()
    await asyncio.sleep(window)
    cpu = time.process_time() - started
    waits = getattr(selector, "waits", 0) - waits
    got = len(delays)
    p99 = statistics.quantiles(delays, n=100)[98] if len(delays) > 100 else float("nan")
    server.close()
    sender.join()
    return cpu, waits, p99, got


def _run(factory: Callable[[], asyncio.AbstractEventLoop], args: argparse.Namespace) -> tuple:
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(_receive(args.nodes, args.bytes, args.window))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--bytes", type=int, default=1800)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--min-turn", type=float, default=None, help="the paced loop's seconds between waits"
    )
    args = parser.parse_args()
    loops = {
        "default": lambda: asyncio.SelectorEventLoop(selectors.DefaultSelector()),
        "paced": lambda: asyncio.SelectorEventLoop(
            PacedSelector() if args.min_turn is None else PacedSelector(args.min_turn)
        ),
    }
    print(f"{args.nodes} connections, a {args.bytes}-byte line each a second, {args.window:g} s")
    for round_ in range(args.rounds):
        for name, factory in loops.items():
            cpu, waits, p99, got = _run(factory, args)
            waits_text = f"{waits / args.window:6.0f}/s" if name == "paced" else "     -  "
            print(f"  round {round_ + 1} {name:8s} CPU {100 * cpu / args.window:5.1f} % of a core, "
                  f"{1e6 * cpu / max(got, 1):5.1f} µs a line, waits {waits_text}, "
                  f"lines {got}, send -> read p99 {1000 * p99:5.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
