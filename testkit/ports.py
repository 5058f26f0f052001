"""Loopback ports for the servers tests and benches start: chosen free, proven theirs.

A port is free when chosen, but a test running beside this one (pytest -n) can bind it
before the server does; the server then exits saying so. A readiness check that only
connects (or asks ``/-/ready``) can be answered by that neighbour instead: only the
kernel's socket table says whose listener a port is.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

BIND_TRIES = 5
PORT_TAKEN = "address already in use"  # what sshd, Prometheus and VictoriaMetrics log
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def free_port() -> int:
    """A loopback port nothing listens on at this moment."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def holds_listener(pid: int, port: int) -> bool:
    """Does process ``pid`` hold a socket listening on 127.0.0.1:``port``?"""
    local = f"0100007F:{port:04X}"  # 127.0.0.1 as a little-endian kernel prints it
    inodes = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[3] == _LISTEN:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return False
    try:
        return any(os.readlink(fd) in inodes for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # the process ended, or a descriptor closed while read
        return False


async def start_on_a_free_port(
    start: Callable[[int], Awaitable[asyncio.subprocess.Process]],
    ready: Callable[[asyncio.subprocess.Process, int], Awaitable[bool]],
    log_text: Callable[[], str],
    ports: Iterable[int] = (),
) -> tuple[asyncio.subprocess.Process, int]:
    """``start(port)`` until ``ready`` says the server listens; another port when it was taken.

    ``ports`` are tried first, then free ones, :data:`BIND_TRIES` in all. ``ready``
    returns False once the process has exited; an exit for any other reason than a taken
    port fails with the end of ``log_text()``.

    Raises:
        RuntimeError: the server exited, or every port tried was taken.
    """
    tried: list[int] = []
    candidates = itertools.chain(ports, iter(free_port, None))
    for port in itertools.islice(candidates, BIND_TRIES):
        tried.append(port)
        process = await start(port)
        if await ready(process, port):
            return process, port
        said = log_text()
        if PORT_TAKEN not in said.lower():
            raise RuntimeError(f"exited {process.returncode} on port {port}: {said[-2000:]}")
    raise RuntimeError(f"every port tried was taken ({tried})")
