"""A loopback fleet in a child process, seen from the client side (benchmarks)."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from collectors.ssh.target import NodeTarget


class LoopbackProcess:
    """``async with LoopbackProcess(nodes=1000) as servers: servers.targets()``."""

    def __init__(self, nodes: int, gpus: int = 8, mode: str = "canned") -> None:
        self._argv = [
            sys.executable, "-m", "testkit.loopback.serve",
            "--nodes", str(nodes), "--gpus", str(gpus), "--mode", mode,
        ]  # fmt: skip
        self._process: asyncio.subprocess.Process | None = None
        self.pid = 0
        self._announce: dict[str, Any] = {}

    async def __aenter__(self) -> LoopbackProcess:
        self._process = await asyncio.create_subprocess_exec(
            *self._argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=_with_repository_on_path(),
        )
        self.pid = self._process.pid
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), 120)
        if not line:
            raise RuntimeError("the loopback server process exited before listening")
        self._announce = json.loads(line)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._process is None:
            return
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), 30)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self._process.wait()

    async def drop(self, names: list[str]) -> None:
        """Cut these nodes' connections on the server side, as a dead link would."""
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(("drop " + " ".join(names) + "\n").encode())
        await self._process.stdin.drain()

    def targets(self, **overrides: Any) -> list[NodeTarget]:
        """One target per served node, trusting the server's generated host key."""
        base = NodeTarget(
            name="",
            host="127.0.0.1",
            user=getpass.getuser(),
            identity_files=(self._announce["client_key_path"],),
            known_hosts=self._announce["known_hosts"],
        )
        base = replace(base, **overrides)
        return [replace(base, name=name, port=port) for name, port in self._announce["nodes"]]


def _with_repository_on_path() -> dict[str, str]:
    # testkit is not installed: the child finds it (and the tree it tests) from here,
    # ahead of anything else on PYTHONPATH, whatever its working directory.
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
