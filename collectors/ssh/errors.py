"""What went wrong with a node, in the transport's status words."""

from __future__ import annotations

import os
import socket

import asyncssh

from collectors.protocol import ProtocolError
from collectors.ssh.config_syntax import SshConfigError
from collectors.ssh.connect import HostKeyMismatchError
from collectors.updates import NodeStatus


class AgentExited(Exception):
    """The agent's channel closed: the process exited, was killed or said bye."""


# Transport trouble: the node is unreachable for now and is retried with backoff.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,
    OSError,
    asyncssh.DisconnectError,
    asyncssh.ChannelOpenError,
    asyncssh.SFTPError,
)


def classify(exc: BaseException) -> tuple[NodeStatus, str, bool]:
    """Map an exception from a node session to (status, reason, expected).

    ``expected`` is False for anything that is a bug: the caller logs it with a
    traceback and the node shows ``agent-error``.
    """
    if isinstance(exc, HostKeyMismatchError):
        return "host-key-mismatch", str(exc), True
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return "host-key-mismatch", f"host key not verifiable: {exc.reason}", True
    if isinstance(exc, asyncssh.PermissionDenied):
        return "auth-failed", f"authentication failed: {exc.reason}", True
    if isinstance(exc, asyncssh.KeyImportError):
        return "auth-failed", f"cannot load the identity file: {exc}", True
    if isinstance(exc, SshConfigError):  # ssh would refuse to connect: say which line
        return "unreachable", f"ssh config: {exc}", True
    if isinstance(exc, ProtocolError):
        return "protocol-error", f"not protocol v1: {exc}", True
    if isinstance(exc, AgentExited):
        return "agent-error", str(exc), True
    if isinstance(exc, TRANSPORT_ERRORS):
        return "unreachable", _transport_reason(exc), True
    return "agent-error", f"internal error: {type(exc).__name__}: {exc}", False


def _transport_reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out connecting"
    if isinstance(exc, asyncssh.DisconnectError):
        return f"disconnected: {exc.reason}"
    if isinstance(exc, asyncssh.ChannelOpenError):
        return f"channel open failed: {exc.reason}"
    if isinstance(exc, asyncssh.SFTPError):
        return f"agent upload failed: {exc.reason}"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host name: {exc.strerror}"
    if isinstance(exc, OSError) and exc.errno:
        # asyncio words a refused connect as "Connect call failed (addr)": say what ssh says.
        return os.strerror(exc.errno).lower()
    return str(exc) or type(exc).__name__
