"""Asking a node for its GPU compute processes, over the connection it already has.

The node screen asks when it opens and then every few seconds while it stays open:
one exec channel on the node's streaming connection runs the *same* verified agent
file (``python3 -c BOOTSTRAP agent-<sha>.pyz <sha256> processes ...``, every word
shell-quoted, the hash checked on the node before anything runs) and reads back one
``processes`` line. No new connection, no upload: a node whose agent is not running
is answered with the reason instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import asyncssh

from collectors.process_list import ProcessListing, decode_listing
from collectors.protocol import MAX_LINE_BYTES, ProtocolError
from collectors.sanitize import clean_bytes
from collectors.ssh.node import NodeSession
from collectors.ssh.upload import MISMATCH_STATUS, MISSING_STATUS, verified_run_command

REQUEST_TIMEOUT_S = 20.0
_STDERR_BYTES = 4096
_CHUNK = 65536


def processes_command(session: NodeSession) -> str:
    """The remote command that lists ``session``'s node's processes, shell-quoted."""
    path, digest = session.agent_file()
    target = session.target
    # The target's agent arguments (sysfs root, simulator flags) apply to this run too.
    return verified_run_command(target.python, path, digest, ["processes", *target.agent_args])


async def request_processes(
    session: NodeSession, timeout_s: float = REQUEST_TIMEOUT_S
) -> ProcessListing:
    """The compute processes on the node of ``session``, read now.

    Never raises for the node's sake: an unconnected node, a transport failure, a
    timeout or a bad answer is a listing with ``error`` set.
    """
    name = session.target.name
    conn = session.conn
    if conn is None:
        reason = session.status.reason if session.status is not None else "not connected yet"
        return _failed(name, f"not connected: {reason}")
    try:
        async with asyncio.timeout(timeout_s):
            status, out, err = await _run(conn, processes_command(session))
    except TimeoutError:
        return _failed(name, f"no answer within {timeout_s:g} s")
    except (asyncssh.Error, OSError) as exc:
        return _failed(name, f"request failed: {type(exc).__name__}: {exc}")
    if status != 0:
        return _failed(name, _exit_reason(status, err))
    lines = [line for line in out.split(b"\n") if line.strip()]
    if not lines:
        return _failed(name, "the agent answered nothing")
    try:
        return decode_listing(name, lines[-1])
    except ProtocolError as exc:
        return _failed(name, f"bad answer: {exc}")


async def _run(conn: asyncssh.SSHClientConnection, command: str) -> tuple[int | None, bytes, bytes]:
    process = await conn.create_process(command, encoding=None, stdin=asyncssh.DEVNULL)
    try:
        out, err = await asyncio.gather(
            _read_capped(process.stdout, MAX_LINE_BYTES + 1),
            _read_capped(process.stderr, _STDERR_BYTES),
        )
        if len(out) > MAX_LINE_BYTES:
            raise ProtocolError("the processes answer is over the line cap")
        await process.wait_closed()
        return process.exit_status, out, err
    except ProtocolError:
        return None, b"", b"answer over the line cap"
    finally:
        process.close()


async def _read_capped(stream: asyncssh.SSHReader[bytes], cap: int) -> bytes:
    """Read to end of file, keeping at most ``cap`` bytes (a flood is drained, not held)."""
    kept = bytearray()
    with contextlib.suppress(asyncssh.Error, OSError):
        while chunk := await stream.read(_CHUNK):
            if len(kept) < cap:
                kept += chunk[: cap - len(kept)]
    return bytes(kept)


def _exit_reason(status: int | None, stderr: bytes) -> str:
    last = clean_bytes(stderr.strip().splitlines()[-1], 300) if stderr.strip() else ""
    if status == MISMATCH_STATUS:
        return "the agent file on the node does not match its SHA-256; refused to run it"
    if status == MISSING_STATUS and "can't open file" in last:
        return "the agent is not on the node yet"
    said = f": {last}" if last else ""
    return f"the agent exited with status {status}{said}"


def _failed(node: str, reason: str) -> ProcessListing:
    return ProcessListing(node, time.time(), (), clean_bytes(reason.encode(), 500))
