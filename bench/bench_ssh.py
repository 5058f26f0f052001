"""SSH transport at fleet scale: first full view, and client CPU per node message.

Runs N simulated nodes (default 1,000) as asyncssh servers in a separate process on
127.0.0.1, so ``getrusage`` of this process is the client's cost alone. The nodes
stream canned protocol v1 lines (a 1 Hz sample of 8 GPUs and 8 IB ports, ~830 B)
from the server process instead of running 1,000 agent processes; everything on the
client side is the real path (connect_node, SFTP upload of the real agent zipapp,
one exec channel per node, line splitting, decode_line, the update sink).

Measured in one run:
  1. cold start (the agent zipapp is uploaded to every node): time to first sample
     from every node;
  2. ours, AES-GCM preferred: warm start time to first full view, then steady
     client CPU per node message;
  3. ours again on asyncssh as shipped (packet dump text built per packet, keepalive
     timer re-armed per read, its general receive path for channel data:
     ``asyncssh_costs.uninstall()``, ``channel_data.uninstall()``), then with only the
     channel data fast path off, then ours once more, so the two runs of ours bracket
     them;
  4. ours with asyncssh's default cipher preference (chacha20-poly1305 first);
  5. baseline, per-poll: one ``conn.run`` of a sampler per sample on a held
     connection, as gpustat-web does (same connections, same cipher, same decoder).

    .venv/bin/python bench/bench_ssh.py --nodes 1000 --window 10

With ``PYTHONPATH`` naming an exported older tree (``git archive``), the same script
measures that tree's client: the way to take a before/after pair in equal conditions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import asyncssh

from collectors.bundle import agent_zipapp_bytes
from collectors.protocol import decode_line
from collectors.ssh import PREFERRED_CIPHERS, NodeTarget, SshFleet, SshOptions, connect_node

try:  # absent from older trees (measured through PYTHONPATH)
    from collectors.ssh import asyncssh_costs
except ImportError:
    asyncssh_costs = None  # type: ignore[assignment]
try:  # absent from older trees
    from collectors.ssh import channel_data
except ImportError:
    channel_data = None  # type: ignore[assignment]
from testkit.loopback.execs import SAMPLE_ONCE
from testkit.loopback.process import LoopbackProcess
from testkit.loopback.recorder import UpdateRecorder

SETTLE_S = 2.0  # let the connect burst's stragglers finish before the CPU window opens


@dataclass
class Steady:
    """Client cost over the measuring window."""

    messages: int
    cpu_s: float
    wall_s: float

    @property
    def us_per_message(self) -> float:
        return 1e6 * self.cpu_s / max(1, self.messages)

    @property
    def core_pct(self) -> float:
        return 100 * self.cpu_s / self.wall_s


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _process_cpu(pid: int) -> float:
    """CPU seconds used so far by process ``pid`` (the loopback servers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _measure(count: Callable[[], int], window: float) -> Steady:
    await asyncio.sleep(SETTLE_S)
    cpu0, msgs0, t0 = _cpu(), count(), time.perf_counter()
    await asyncio.sleep(window)  # a benchmark window, not synchronisation
    return Steady(count() - msgs0, _cpu() - cpu0, time.perf_counter() - t0)


async def _cipher_of(target: NodeTarget, options: SshOptions) -> str:
    conn = await connect_node(target, options)
    cipher = f"{conn.get_extra_info('recv_cipher')} {conn.get_extra_info('recv_compression')}"
    conn.close()
    await conn.wait_closed()
    return cipher


@dataclass
class FirstView:
    """Fleet start until every node has sent a sample: wall time and CPU on both sides."""

    wall_s: float
    client_cpu_s: float
    server_cpu_s: float

    def __str__(self) -> str:
        return (
            f"{self.wall_s:.2f} s (client CPU {self.client_cpu_s:.2f} s, "
            f"loopback servers' CPU {self.server_cpu_s:.2f} s)"
        )


async def streaming(
    targets: Sequence[NodeTarget], options: SshOptions, window: float | None, server_pid: int
) -> tuple[FirstView, Steady | None]:
    """Start an SshFleet; time until every node streamed; then the steady window."""
    rec = UpdateRecorder()
    fleet = SshFleet(targets, rec, options)
    start, cpu, server = time.perf_counter(), _cpu(), _process_cpu(server_pid)
    await fleet.start()
    try:
        await rec.wait_until(lambda: len(rec.first_sample_at) == len(targets), 300)
        first_view = FirstView(
            time.perf_counter() - start, _cpu() - cpu, _process_cpu(server_pid) - server
        )
        steady = await _measure(lambda: rec.messages, window) if window else None
    finally:
        await fleet.stop()
    return first_view, steady


async def per_poll(targets: Sequence[NodeTarget], options: SshOptions, window: float) -> Steady:
    """The gpustat-web shape: a held connection, one exec per sample."""
    gate = asyncio.Semaphore(options.max_concurrent_connects)
    received = 0

    async def connect(target: NodeTarget) -> asyncssh.SSHClientConnection:
        async with gate:
            return await connect_node(target, options)

    async def poll(conn: asyncssh.SSHClientConnection, interval: float) -> None:
        nonlocal received
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            # asyncio.timeout, not wait_for: 3.11's wait_for can drop the cancel that
            # ends the window when the run completes at that moment, and the poller then
            # polls on for ever. One run hung near idle in this phase, which fits that.
            async with asyncio.timeout(30):
                result = await conn.run(SAMPLE_ONCE, encoding=None)
            decode_line(result.stdout or b"")
            received += 1
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - loop.time()))

    conns = await asyncio.gather(*(connect(t) for t in targets))
    pollers = [
        asyncio.create_task(poll(c, t.interval)) for c, t in zip(conns, targets, strict=True)
    ]
    try:
        return await _measure(lambda: received, window)
    finally:
        for task in pollers:
            task.cancel()
        await asyncio.gather(*pollers, return_exceptions=True)
        for conn in conns:
            conn.close()


async def shipped_asyncssh(
    targets: Sequence[NodeTarget], options: SshOptions, window: float, server_pid: int
) -> Steady | None:
    """Streaming on asyncssh as shipped: its per-packet log formatting and keepalive
    re-arm, and its general receive path for channel data."""
    if asyncssh_costs is None:
        return None
    asyncssh_costs.uninstall()
    if channel_data is not None:
        channel_data.uninstall()
    try:
        _, steady = await streaming(targets, replace(options), window, server_pid)
    finally:
        asyncssh_costs.install()
        if channel_data is not None:
            channel_data.install()
    return steady


async def without_fast_path(
    targets: Sequence[NodeTarget], options: SshOptions, window: float, server_pid: int
) -> Steady | None:
    """Streaming with channel data through asyncssh's own receive path (the rest ours)."""
    if channel_data is None:
        return None
    channel_data.uninstall()
    try:
        _, steady = await streaming(targets, replace(options), window, server_pid)
    finally:
        channel_data.install()
    return steady


async def main(nodes: int, window: float, poll: bool, cipher: bool) -> None:
    bundle = agent_zipapp_bytes()
    gcm = SshOptions(ssh_config=None, connect_timeout=60, agent_bundle=bundle)
    default = SshOptions(
        ssh_config=None, connect_timeout=60, agent_bundle=bundle, encryption_algs=None
    )
    async with LoopbackProcess(nodes) as servers:
        targets = servers.targets()
        print(f"# {nodes} loopback nodes (server pid {servers.pid}), window {window:.0f} s")
        print(f"# python {platform.python_version()}, asyncssh {asyncssh.__version__}")
        print(f"# cipher, compression: ours {await _cipher_of(targets[0], gcm)}, "
              f"default {await _cipher_of(targets[0], default)}")  # fmt: skip
        pid = servers.pid
        cold, _ = await streaming(targets, gcm, None, pid)
        print(f"cold start (upload {len(bundle[1]) // 1024} KiB to every node): {cold}", flush=True)
        # Fresh options (empty per-host, key and known_hosts caches), as after a restart.
        warm, ours = await streaming(targets, replace(gcm), window, pid)
        print(f"first full view, warm (agent already on nodes): {warm}  (goal <= 3 s)")
        shipped = await shipped_asyncssh(targets, gcm, window, pid)
        slow_data = await without_fast_path(targets, gcm, window, pid)
        # The first streaming phase again: the two of ours bracket the shipped one.
        _, ours_again = await streaming(targets, replace(gcm), window, pid)
        lib_default = None
        if cipher:
            _, lib_default = await streaming(targets, default, window, pid)
            print("default-cipher phase done", flush=True)
        polled = await per_poll(targets, gcm, window) if poll else None
    assert ours is not None and ours_again is not None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{'client path':<40} {'msgs':>7} {'CPU s':>7} {'us/msg':>8} {'% core':>7}")
    rows = [
        (f"streaming, {PREFERRED_CIPHERS[0]} preferred", ours),
        ("  same, asyncssh as shipped", shipped),
        ("  same, channel data on asyncssh's path", slow_data),
        ("  same, again (after the shipped run)", ours_again),
        ("streaming, asyncssh default cipher", lib_default),
    ]
    if polled is not None:
        rows.append(("per-poll conn.run (gpustat-web)", polled))
    for label, steady in rows:
        if steady is None:
            continue
        print(f"{label:<40} {steady.messages:>7} {steady.cpu_s:>7.2f} "
              f"{steady.us_per_message:>8.1f} {steady.core_pct:>7.1f}")  # fmt: skip
    if polled is not None:
        print(f"ratio per-poll / streaming-GCM: {polled.us_per_message / ours.us_per_message:.2f}x "
              "(goal >= 3x)")  # fmt: skip
    ours_us = (ours.us_per_message + ours_again.us_per_message) / 2
    if shipped is not None:
        print(f"ratio asyncssh as shipped / ours: {shipped.us_per_message / ours_us:.2f}x")
    if slow_data is not None:
        print(f"ratio channel data on asyncssh's path / ours: "
              f"{slow_data.us_per_message / ours_us:.2f}x")  # fmt: skip
    if lib_default is not None:
        print(f"ratio default cipher / GCM: {lib_default.us_per_message / ours_us:.2f}x")
    print(f"streaming-GCM us/msg: {ours.us_per_message:.1f} (goal <= 150); peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--window", type=float, default=10.0, help="seconds of steady state")
    parser.add_argument(
        "--no-poll", action="store_true", help="skip the per-poll baseline (the slowest phase)"
    )
    parser.add_argument(
        "--no-default-cipher", action="store_true", help="skip the asyncssh default-cipher phase"
    )
    args = parser.parse_args()
    print(f"# load average {os.getloadavg()[0]:.2f} at start")
    asyncio.run(main(args.nodes, args.window, not args.no_poll, not args.no_default_cipher))
