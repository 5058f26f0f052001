"""Loopback SSH nodes that run every command with a real shell in their own home.

Unlike the canned loopback nodes, nothing is interpreted here: the controller's
command line runs under ``/bin/sh -c`` exactly as sshd would run it, the agent file
is whatever is in the node's home, and SFTP (optional, to test the fallback) is
jailed in that home. A hostile node is then just a hostile agent file.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh

from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget
from testkit.loopback.harness import fast_options


class _Server(asyncssh.SSHServer):
    def __init__(self, client_key: asyncssh.SSHKey) -> None:
        self._client_key = client_key

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return key.public_data == self._client_key.public_data


@dataclass(eq=False)
class ShellNode:
    """One node: its home directory, port, and the commands it was asked to run."""

    name: str
    home: Path
    port: int = 0
    commands: list[str] = field(default_factory=list)
    handlers: set[asyncio.Future[Any]] = field(default_factory=set)

    async def run(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            await self._run(process)
        finally:
            self.handlers.discard(task)

    async def _run(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        command = process.command or ""
        self.commands.append(command)
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            cwd=self.home,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(self.home)},
            start_new_session=True,  # the shell's children die with it (killpg below)
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        feed = asyncio.ensure_future(_feed(process.stdin, proc.stdin))
        pumps = asyncio.gather(
            _pump(proc.stdout, process.stdout), _pump(proc.stderr, process.stderr)
        )
        pumps.add_done_callback(_retrieve)
        closed = asyncio.ensure_future(process.wait_closed())
        try:
            done, _ = await asyncio.wait({pumps, closed}, return_when=asyncio.FIRST_COMPLETED)
            if pumps in done:
                with contextlib.suppress(OSError, asyncssh.Error):
                    process.exit(await proc.wait())
        finally:
            feed.cancel()
            closed.cancel()
            # asyncssh cancels a closing connection's handlers: the cleanup is its own task,
            # kept in ``handlers`` until done, so shutdown can wait for it.
            cleanup = asyncio.ensure_future(self._end(proc, pumps))
            self.handlers.add(cleanup)
            cleanup.add_done_callback(self.handlers.discard)
            await asyncio.shield(cleanup)

    async def _end(self, proc: asyncio.subprocess.Process, pumps: asyncio.Future[Any]) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        if proc.stdin is not None:
            proc.stdin.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(pumps, 5)


def _retrieve(future: asyncio.Future[Any]) -> None:
    # The pumps end cancelled when the server closes first: nothing to report then.
    if not future.cancelled():
        future.exception()


async def _feed(reader: asyncssh.SSHReader[bytes], stdin: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, asyncssh.Error, ConnectionError):
        while chunk := await reader.read(65536):
            stdin.write(chunk)
            await stdin.drain()
        stdin.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncssh.SSHWriter[bytes]) -> None:
    while chunk := await reader.read(65536):
        with contextlib.suppress(OSError, asyncssh.Error):
            writer.write(chunk)


@dataclass
class ShellFleet:
    """Started nodes plus what a controller needs to reach them."""

    nodes: dict[str, ShellNode]
    client_key_path: str
    host_key: asyncssh.SSHKey

    def target(self, name: str, **overrides: Any) -> NodeTarget:
        node = self.nodes[name]
        settings: dict[str, Any] = {
            "name": name,
            "host": "127.0.0.1",
            "port": node.port,
            "identity_files": (self.client_key_path,),
            "known_hosts": (self.host_key.convert_to_public(),),
            "python": "python3",
            "interval": 0.2,
            "slow_interval": 1.0,
            "expected_gpus": 1,
        }
        settings.update(overrides)
        return NodeTarget(**settings)


@contextlib.asynccontextmanager
async def shell_fleet(
    names: list[str], workdir: Path, *, sftp: bool = True
) -> AsyncIterator[ShellFleet]:
    """Start one shell node per name (homes under ``workdir``); stop them on exit."""
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = workdir / "client_key"
    client_key.write_private_key(str(key_path))
    key_path.chmod(0o600)
    nodes: dict[str, ShellNode] = {}
    acceptors = []
    try:
        for name in names:
            home = workdir / name
            home.mkdir()
            node = ShellNode(name, home)
            acceptor = await asyncssh.listen(
                "127.0.0.1",
                0,
                server_host_keys=[host_key],
                server_factory=functools.partial(_Server, client_key),
                process_factory=node.run,
                sftp_factory=(
                    functools.partial(asyncssh.SFTPServer, chroot=str(home).encode())
                    if sftp
                    else None
                ),
                encoding=None,
                allow_scp=False,
            )
            node.port = acceptor.sockets[0].getsockname()[1]
            acceptors.append(acceptor)
            nodes[name] = node
        yield ShellFleet(nodes, str(key_path), host_key)
    finally:
        for acceptor in acceptors:
            acceptor.close()
            await acceptor.wait_closed()
        # Every command's process is gone (and its pipes closed) before the loop ends.
        for _ in range(3):  # a handler's cleanup task may join the set while we wait
            handlers = [task for node in nodes.values() for task in node.handlers]
            await asyncio.wait_for(asyncio.gather(*handlers, return_exceptions=True), 10)


def options_with_agent(content: bytes, name: str = "agent-0123456789ab.pyz") -> SshOptions:
    """Quick SSH options whose agent bundle is ``content`` (any Python source runs)."""
    return fast_options(agent_bundle=(name, content), connect_timeout=10.0)
