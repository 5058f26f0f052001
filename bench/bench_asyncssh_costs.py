"""asyncssh's per-read costs with and without collectors/ssh/asyncssh_costs, in one run.

One real asyncssh connection on loopback (server in this process, idle). Timed, per
call, CPU time, best of several interleaved rounds: what asyncssh runs for every
received packet to log it (``log_received_packet`` of a channel data packet, at debug
level 1) for every read to restart the keepalive timer (``_reset_keepalive_timer``), and for
every packet to ask whether its handler's result is awaitable;
and the timers each leaves in the loop's heap. The baseline is asyncssh as shipped
(:func:`asyncssh_costs.uninstall`), the same methods on the same connection.

    PYTHONPATH=. .venv/bin/python bench/bench_asyncssh_costs.py --calls 20000
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import time
from collections.abc import Callable

import asyncssh
import asyncssh.connection
from asyncssh.packet import SSHPacket

from collectors.ssh import asyncssh_costs

MSG_CHANNEL_DATA = 94


class _OpenServer(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False


async def _idle(process: asyncssh.SSHServerProcess[str]) -> None:
    await process.stdin.read()


def _per_call_us(call: Callable[[], object], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - start) / calls * 1e6


async def measure(calls: int, rounds: int) -> dict[str, dict[str, float]]:
    key = asyncssh.generate_private_key("ssh-ed25519")
    server = await asyncssh.listen(
        "127.0.0.1", 0, server_host_keys=[key], server_factory=_OpenServer, process_factory=_idle
    )
    conn = await asyncssh.connect(
        "127.0.0.1", server.get_port(), known_hosts=None, username="u", keepalive_interval=5
    )
    chan, _ = await conn.create_session(asyncssh.SSHClientSession, "true")
    packet = SSHPacket(bytes([MSG_CHANNEL_DATA]) + bytes(4) + bytes(4) + b"x" * 900)
    loop = asyncio.get_running_loop()
    sides = {"asyncssh as shipped": False, "asyncssh_costs": True}
    best: dict[str, dict[str, float]] = {side: {} for side in sides}
    for _ in range(rounds):
        for side, install in sides.items():
            asyncssh_costs.install() if install else asyncssh_costs.uninstall()
            log = _per_call_us(lambda: chan.log_received_packet(MSG_CHANNEL_DATA, 7, packet), calls)
            before = len(loop._scheduled)  # type: ignore[attr-defined]
            reset = _per_call_us(conn._reset_keepalive_timer, calls)
            heap = (len(loop._scheduled) - before) / calls  # type: ignore[attr-defined]
            awaitable = asyncssh.connection.inspect.isawaitable
            check = _per_call_us(functools.partial(awaitable, True), calls)
            row = best[side]
            row["await"] = min(row.get("await", float("inf")), check)
            row["log"] = min(row.get("log", float("inf")), log)
            row["reset"] = min(row.get("reset", float("inf")), reset)
            row["heap"] = heap
    asyncssh_costs.install()
    chan.close()
    conn.close()
    server.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    best = asyncio.run(measure(args.calls, args.rounds))
    shipped, ours = best["asyncssh as shipped"], best["asyncssh_costs"]
    print(f"# asyncssh {asyncssh.__version__} (read at {asyncssh_costs.ASYNCSSH_READ_AT}); "
          f"load {os.getloadavg()[0]:.2f}; CPU µs per call, "
          f"best of {args.rounds} x {args.calls}")  # fmt: skip
    print(f"{'per received packet / read':<44} {'shipped':>8} {'ours':>8} {'ratio':>7}")
    for label, key in (
        ("log_received_packet (debug level 1)", "log"),
        ("_reset_keepalive_timer", "reset"),
        ("inspect.isawaitable(True) in _recv_packet", "await"),
    ):
        print(
            f"{label:<44} {shipped[key]:>8.3f} {ours[key]:>8.3f} {ours[key] / shipped[key]:>6.2f}x"
        )
    heap = "timers added to the loop heap per read"
    print(f"{heap:<44} {shipped['heap']:>8.3f} {ours['heap']:>8.3f}")


if __name__ == "__main__":
    main()
