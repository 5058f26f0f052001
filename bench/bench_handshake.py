"""CPU of one SSH handshake on each side, by key exchange, against the loopback nodes.

N canned loopback nodes in another process (``testkit.loopback.process``); N
connections at a time of at most 64 (``SshOptions.max_concurrent_connects``), each
closed once open, with the key exchange asyncssh negotiates by default and then with
curve25519-sha256 alone, twice each, alternating. Client CPU is this process's, server
CPU the nodes' process's, both per connection. What the first full view of a fleet
start costs before any agent line moves.

    PYTHONPATH=. .venv/bin/python bench/bench_handshake.py --nodes 200
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

import asyncssh
import asyncssh.connection

from testkit.loopback.process import LoopbackProcess

IN_FLIGHT = 64
CIPHER = "aes128-gcm@openssh.com"  # gpufleet's first choice (collectors/ssh/options.py)
BASELINE_KEX = "curve25519-sha256"


_negotiated: set[str] = set()
_get_kex = asyncssh.connection.get_kex


def _noting_get_kex(conn: object, alg: bytes) -> object:
    """asyncssh's ``get_kex``, noting which key exchange each connection agreed on."""
    _negotiated.add(alg.decode())
    return _get_kex(conn, alg)  # type: ignore[arg-type]


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _handshakes(servers: LoopbackProcess, kex: str | None) -> tuple[str, float, float]:
    """(kex negotiated, client ms, server ms) per connection."""
    announce = servers._announce
    targets = servers.targets()
    options = asyncssh.SSHClientConnectionOptions(
        known_hosts=asyncssh.read_known_hosts(announce["known_hosts"]),
        client_keys=asyncssh.load_keypairs([announce["client_key_path"]]),
        username=targets[0].user,
        encryption_algs=[CIPHER],
        **({} if kex is None else {"kex_algs": [kex]}),
    )
    gate = asyncio.Semaphore(IN_FLIGHT)
    _negotiated.clear()

    async def one(host: str, port: int) -> None:
        async with gate:
            conn = await asyncssh.connect(host, port=port, options=options)
            conn.close()
            await conn.wait_closed()

    client, server = time.process_time(), _process_cpu(servers.pid)
    await asyncio.gather(*(one(t.host, t.port or 22) for t in targets))
    client, server = time.process_time() - client, _process_cpu(servers.pid) - server
    n = len(targets)
    return ",".join(sorted(_negotiated)), 1000 * client / n, 1000 * server / n


async def main(nodes: int) -> None:
    asyncssh.connection.get_kex = _noting_get_kex  # type: ignore[assignment]
    async with LoopbackProcess(nodes) as servers:
        print(f"# {nodes} loopback nodes, {IN_FLIGHT} handshakes in flight, cipher {CIPHER}")
        print(f"# load average {os.getloadavg()[0]:.2f}")
        print(f"{'key exchange asked':<20} {'negotiated':<28} {'client ms':>9} {'server ms':>9}")
        client: dict[str, list[float]] = {"default": [], BASELINE_KEX: []}
        for kex in (None, BASELINE_KEX, None, BASELINE_KEX):
            name = kex or "default"
            negotiated, client_ms, server_ms = await _handshakes(servers, kex)
            client[name].append(client_ms)
            print(f"{name:<20} {negotiated:<28} {client_ms:>9.2f} {server_ms:>9.2f}")
        ratio = sum(client["default"]) / sum(client[BASELINE_KEX])
        print(f"client CPU, default / {BASELINE_KEX}: {ratio:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=200)
    asyncio.run(main(parser.parse_args().nodes))
