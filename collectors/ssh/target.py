"""One node as the SSH transport sees it: where it is, how to log in, how to run the agent."""

from __future__ import annotations

import enum
import posixpath
from dataclasses import dataclass
from typing import Literal

import asyncssh

HostKeyPolicy = Literal["strict", "accept-new"]


class KnownHostsDefault(enum.Enum):
    """Verify host keys the way ``ssh`` would: ``UserKnownHostsFile`` or ``~/.ssh/known_hosts``."""

    SSH_CONFIG = "ssh-config"


# Trusted host keys: a known_hosts file path, a list of keys trusted for this node,
# the ssh default, or None (no verification: tests only, never from a config file).
KnownHosts = str | tuple[asyncssh.SSHKey, ...] | KnownHostsDefault | None


@dataclass(frozen=True, slots=True)
class NodeTarget:
    """Everything needed to reach one node and run the agent there.

    ``None`` for ``port``, ``user`` and ``jump_host`` (and an empty
    ``identity_files``) leaves the choice to ``~/.ssh/config`` and the ssh-agent,
    as ``ssh`` would.
    """

    name: str
    host: str
    port: int | None = None
    user: str | None = None
    identity_files: tuple[str, ...] = ()
    jump_host: str | None = None
    python: str = "python3"
    interval: float = 1.0
    slow_interval: float = 10.0
    expected_gpus: int = 8
    known_hosts: KnownHosts = KnownHostsDefault.SSH_CONFIG
    host_key_policy: HostKeyPolicy = "strict"
    remote_cache_dir: str = "~/.cache/gpufleet"
    agent_args: tuple[str, ...] = ()

    @property
    def address(self) -> str:
        """``host:port`` for messages (the port only when one is set)."""
        return self.host if self.port is None else f"{self.host}:{self.port}"


def sftp_dir(remote_dir: str) -> str:
    """The remote directory as SFTP and a login shell's cwd both see it.

    SFTP and an exec'd command both start in the login's home directory, so
    ``~/x`` becomes the relative path ``x``: no shell tilde expansion is needed and
    the path can be quoted whole.
    """
    if remote_dir in ("~", "~/"):
        return "."
    if remote_dir.startswith("~/"):
        return posixpath.normpath(remote_dir[2:])
    if remote_dir.startswith("~"):
        raise ValueError(f"remote directory {remote_dir!r}: only '~/' is supported")
    return posixpath.normpath(remote_dir)
