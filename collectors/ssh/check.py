"""Trying one node once: connect, upload the agent, run it until its hello (``gpufleet check``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

import asyncssh

from collectors.protocol import Error, Hello, ProtocolError, Sample, decode_line
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
    """The outcome of trying one node: its hello, or the status and reason it failed with.

    ``cause``: why a node whose agent said hello still fails (fewer GPUs than expected,
    NVML missing), in one line that leads with the cause.
    """

    name: str
    hello: Hello | None
    status: NodeStatus
    reason: str
    cause: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the agent started, said hello and sees every GPU the node should have."""
        return self.hello is not None and self.cause is None


def gpu_shortfall(hello: Hello, expected: int, nvml_error: Error | None) -> str | None:
    """Why a node that said hello is not fit to watch, or None when it is."""
    seen = len(hello.gpus)
    if nvml_error is not None:
        return f"no NVML ({nvml_error.code}): {seen} of {expected} expected GPUs"
    if seen < expected:
        missing = expected - seen
        plural = "s" if missing != 1 else ""
        return f"{missing} GPU{plural} missing: {seen} of {expected} expected GPUs visible"
    return None


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
        hello, nvml_error = await _first_hello(conn, command, hello_within)
        cause = gpu_shortfall(hello, target.expected_gpus, nvml_error)
        said = f"agent {hello.agent} said hello"
        return NodeCheck(target.name, hello, "streaming", said, cause)
    except Exception as exc:
        return _failed(target, exc)
    finally:
        conn.close()
        with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
            await asyncio.wait_for(conn.wait_closed(), 2.0)


async def _first_hello(
    conn: asyncssh.SSHClientConnection, command: str, within: float
) -> tuple[Hello, Error | None]:
    """The agent's hello and, when it opened no NVML, the error it sends right after."""
    said: asyncio.Queue[Hello | Error | Sample] = asyncio.Queue()
    hello_seen: list[Hello] = []

    def on_line(line: bytes) -> None:
        try:
            message = decode_line(line)
        except ProtocolError as exc:
            session.fail(exc)
            return
        if isinstance(message, Error) and (message.fatal or not hello_seen):
            session.fail(AgentExited(f"agent error {message.code}: {message.message}"))
        elif not hello_seen and not isinstance(message, Hello):
            session.fail(ProtocolError(f"first message is {type(message).__name__}, not hello"))
        elif isinstance(message, Hello | Error | Sample):
            if isinstance(message, Hello):
                hello_seen.append(message)
            said.put_nowait(message)

    session = AgentChannel(on_line)
    chan, _ = await conn.create_session(lambda: session, command, encoding=None)
    deadline = asyncio.get_running_loop().time() + within
    try:
        hello = await _next(said, session, deadline, within)
        assert isinstance(hello, Hello)  # on_line lets nothing else in first
        if hello.nvml is not None:
            return hello, None
        # Without NVML the agent says why in the message after its hello.
        after = await _next(said, session, deadline, within)
        return hello, after if isinstance(after, Error) else None
    finally:
        chan.close()


async def _next(
    said: asyncio.Queue[Hello | Error | Sample],
    session: AgentChannel,
    deadline: float,
    within: float,
) -> Hello | Error | Sample:
    if not said.empty():
        return said.get_nowait()
    getting = asyncio.ensure_future(said.get())
    waiting: set[asyncio.Future[Any]] = {getting, session.ended}
    left = max(0.0, deadline - asyncio.get_running_loop().time())
    done, _ = await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)
    if getting in done:
        return getting.result()
    getting.cancel()
    if session.ended in done:
        raise session.ended.result()
    raise AgentExited(f"no hello from the agent within {within:.0f} s")


def _failed(target: NodeTarget, exc: BaseException) -> NodeCheck:
    status, reason, expected = classify(exc)
    if not expected:
        log.error("node %s: unexpected error", target.name, exc_info=exc)
    return NodeCheck(target.name, None, status, reason)
