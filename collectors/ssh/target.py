"""One node as the SSH transport sees it: where it is, how to log in, how to run the agent."""

from __future__ import annotations

import enum
import posixpath
import re
import urllib.parse
from dataclasses import dataclass
from typing import Literal

import asyncssh

HostKeyPolicy = Literal["strict", "accept-new"]


class KnownHostsDefault(enum.Enum):
    """Verify host keys the way ``ssh`` would, with the ssh config's known_hosts files.

    ``UserKnownHostsFile`` (default ``~/.ssh/known_hosts`` and ``~/.ssh/known_hosts2``)
    and ``GlobalKnownHostsFile`` (default ``/etc/ssh/ssh_known_hosts`` and
    ``ssh_known_hosts2``); accept-new records into the first ``UserKnownHostsFile``.
    """

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


@dataclass(frozen=True, slots=True)
class JumpHop:
    """One bastion of a ProxyJump chain: ``[user@]host[:port]`` or ``ssh://[user@]host[:port]``."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        """The hop as ``ssh -G`` prints it: brackets around an IPv6 address."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = "" if self.user is None else f"{self.user}@"
        port = "" if self.port is None else f":{self.port}"
        return f"{user}{host}{port}"


def parse_jump_chain(spec: str) -> tuple[JumpHop, ...]:
    """The hops of a ProxyJump value (``none`` is no hop), first hop first.

    Parsed as OpenSSH's ``parse_jump`` does: each comma-separated hop is an
    ``ssh://`` URI or ``[user@]host[:port]``, the user ending at the last ``@`` and an
    IPv6 address in brackets.

    Raises:
        ValueError: a hop OpenSSH would refuse, named.
    """
    if spec.strip().lower() == "none":
        return ()
    return tuple(_parse_hop(hop) for hop in spec.split(","))


def _parse_hop(hop: str) -> JumpHop:
    if hop.startswith("ssh://"):
        parsed = _parse_ssh_uri(hop[len("ssh://") :])
    else:
        user, at, address = hop.rpartition("@")
        parsed = None if at and not user else _parse_address(address, user if at else None)
    if parsed is None:
        raise ValueError(f"invalid jump host {hop!r}: expected [user@]host[:port]")
    return parsed


def _parse_ssh_uri(rest: str) -> JumpHop | None:
    user: str | None = None
    info, at, address = rest.partition("@")
    if at:
        # ssh://user;params@host: connection parameters are accepted and ignored.
        user = urllib.parse.unquote(info.partition(";")[0])
    else:
        address = info
    address = address[:-1] if address.endswith("/") else address
    parsed = _parse_address(address, user)
    if parsed is None or not _DOMAIN.fullmatch(parsed.host):
        return None  # OpenSSH takes only a domain name (no IPv6 literal) in a URI
    return parsed


_DOMAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _parse_address(address: str, user: str | None) -> JumpHop | None:
    if address.startswith("["):
        host, bracket, port = address[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return None
        port = port[1:]
    else:
        host, _, port = address.partition(":")
    if not host or (port and not _valid_port(port)):
        return None
    return JumpHop(host=host, user=user, port=int(port) if port else None)


def _valid_port(port: str) -> bool:
    return port.isdigit() and 0 < int(port) <= 65535
