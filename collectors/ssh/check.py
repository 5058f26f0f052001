"""Trying one node once: connect, upload the agent, run it until its hello (``gpufleet check``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import asyncssh

from collectors.protocol import Error, Hello, ProtocolError, decode_line
from collectors.ssh.connect import connect_node
from collectors.ssh.errors import AgentExited, classify
from collectors.ssh.node import agent_command
from collectors.ssh.options import SshOptions
from collectors.ssh.stream import AgentChannel
from collectors.ssh.target import NodeTarget
from collectors.ssh.upload import ensure_uploaded, sha256_hex
from collectors.updates import NodeStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NodeCheck:
    """The outcome of trying one node: its hello, or the status and reason it failed with."""

    name: str
    hello: Hello | None
    status: NodeStatus
    reason: str

    @property
    def ok(self) -> bool:
        """Whether the agent started and said hello."""
        return self.hello is not None


async def check_node(
    target: NodeTarget,
    options: SshOptions,
    bundle: tuple[str, bytes],
    hello_within: float = 30.0,
) -> NodeCheck:
    """Connect to ``target``, make sure the agent is there and wait for its hello.

    Never raises for a node problem: the failure is in the result, with the same
    status words the live transport uses.
    """
    try:
        conn = await connect_node(target, options)
    except Exception as exc:
        return _failed(target, exc)
    try:
        name, content = bundle
        path = await ensure_uploaded(
            conn, name, content, target.remote_cache_dir, python=target.python
        )
        command = agent_command(target, path, sha256_hex(content))
        hello = await _first_hello(conn, command, hello_within)
        return NodeCheck(target.name, hello, "streaming", f"agent {hello.agent} said hello")
    except Exception as exc:
        return _failed(target, exc)
    finally:
        conn.close()
        with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
            await asyncio.wait_for(conn.wait_closed(), 2.0)


async def _first_hello(conn: asyncssh.SSHClientConnection, command: str, within: float) -> Hello:
    first: asyncio.Future[Hello] = asyncio.get_running_loop().create_future()

    def on_line(line: bytes) -> None:
        try:
            message = decode_line(line)
        except ProtocolError as exc:
            session.fail(exc)
            return
        if isinstance(message, Error):
            session.fail(AgentExited(f"agent error {message.code}: {message.message}"))
        elif not isinstance(message, Hello):
            session.fail(ProtocolError(f"first message is {type(message).__name__}, not hello"))
        elif not first.done():
            first.set_result(message)

    session = AgentChannel(on_line)
    chan, _ = await conn.create_session(lambda: session, command, encoding=None)
    try:
        waiting: set[asyncio.Future[Any]] = {first, session.ended}
        done, _ = await asyncio.wait(waiting, timeout=within)
        if first in done:
            return first.result()
        if session.ended in done:
            raise session.ended.result()
        raise AgentExited(f"no hello from the agent within {within:.0f} s")
    finally:
        chan.close()


def _failed(target: NodeTarget, exc: BaseException) -> NodeCheck:
    status, reason, expected = classify(exc)
    if not expected:
        log.error("node %s: unexpected error", target.name, exc_info=exc)
    return NodeCheck(target.name, None, status, reason)
