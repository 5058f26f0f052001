"""Run a loopback fleet in its own process: ``python -m testkit.loopback.serve``.

Benchmarks measure the client's CPU with ``getrusage``; the simulated nodes must not
share its process. Prints one JSON line (ports, key and known_hosts paths) once every
node listens, then serves until stdin closes. A line ``drop NAME...`` on stdin cuts
those nodes' connections at once, as a dead link would (the soak's flapping).

Lines leave one SSH packet each, as OpenSSH's sshd sends them (testkit.loopback.as_openssh);
``--framing asyncssh`` keeps asyncssh's ignore message before every packet.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys

from testkit.loopback.as_openssh import frame_as_openssh
from testkit.loopback.fleet import LoopbackFleet


def _raise_fd_limit() -> None:
    # One listening socket and one connection per node: 1,000 nodes need ~2,000 fds.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def serve(nodes: int, gpus: int, mode: str) -> None:
    """Serve until stdin reaches end of file."""
    _raise_fd_limit()
    fleet = LoopbackFleet(nodes, gpus, mode="canned" if mode == "canned" else "agent")
    async with fleet:
        announce = {
            "nodes": [[n.name, n.port] for n in fleet.nodes.values()],
            "known_hosts": fleet.known_hosts,
            "client_key_path": fleet.client_key_path,
        }
        print(json.dumps(announce), flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            command, *names = line.split()
            if command == "drop":
                for name in names:
                    if name in fleet.nodes:
                        fleet.nodes[name].drop_connections()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--mode", choices=("canned", "agent"), default="canned")
    parser.add_argument("--framing", choices=("openssh", "asyncssh"), default="openssh")
    args = parser.parse_args()
    if args.framing == "openssh":
        frame_as_openssh()
    asyncio.run(serve(args.nodes, args.gpus, args.mode))


if __name__ == "__main__":
    main()
