"""Opening one node's SSH connection with verified host keys (shared with the probe runner)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import asyncssh

from collectors.ssh import asyncssh_costs, channel_data
from collectors.ssh.config_syntax import SshConfigError
from collectors.ssh.openssh_config import HostConfig
from collectors.ssh.options import SshOptions
from collectors.ssh.target import KnownHostsDefault, NodeTarget, parse_jump_chain

# Every node connection (and the probe runner's) is opened here: asyncssh's per-packet
# log formatting and keepalive re-arm are made free before the first one, and channel
# data on an established connection takes the fast path (collectors/ssh/channel_data).
asyncssh_costs.install()
channel_data.install()


class HostKeyMismatchError(Exception):
    """The node's host key is not trusted; the message names the host and fingerprint."""


async def connect_node(target: NodeTarget, options: SshOptions) -> asyncssh.SSHClientConnection:
    """Open an authenticated SSH connection to ``target`` (through its jump hosts, if any).

    Jump hosts (``target.jump_host``, else the ssh config's ProxyJump for the host)
    are reached with the target's known_hosts and host key policy, so a bastion is
    verified like any node; their user, port and keys come from the hop itself or
    the ssh config's block for it, else the target's identity files.

    Raises:
        HostKeyMismatchError: the host key is unknown (strict policy) or has changed.
        asyncssh.PermissionDenied: authentication failed.
        asyncssh.Error, OSError, TimeoutError: the node could not be reached.
    """
    hops = jump_chain(target, options)
    tunnel = await _open_jumps(hops, options) if hops else None
    try:
        conn = await _connect_direct(target, options, tunnel)
    except BaseException:
        if tunnel is not None:
            tunnel.close()
        raise
    if tunnel is not None:
        conn.set_tunnel(tunnel)  # closed together with the node's connection
    return conn


def jump_chain(target: NodeTarget, options: SshOptions) -> list[NodeTarget]:
    """Every bastion on the way to ``target``, first hop first.

    The chain is ``target.jump_host``, else the ssh config's ProxyJump for it. As
    ``ssh`` reaches the first hop with a plain ``ssh hop`` (the later ones get the
    rest of the chain with ``-J``), the first hop's own ProxyJump applies too, and
    so on: ``Host gpu-*: ProxyJump login`` with ``Host login: ProxyJump bastion``
    goes bastion, login, node.

    Raises:
        SshConfigError: a hop OpenSSH would refuse, or the chain comes back to a
            host already on it.
    """
    spec = target.jump_host or _config_proxy_jump(target, options)
    chain: list[NodeTarget] = []
    seen = {(target.host, target.port)}
    while spec:
        try:
            hops = jump_hops(replace(target, jump_host=spec))
        except ValueError as exc:
            raise SshConfigError(f"{target.name}: {exc}") from None
        chain[:0] = hops
        first = hops[0]
        if (first.host, first.port) in seen:
            raise SshConfigError(f"ProxyJump loop: {target.host} is reached through {first.host}")
        seen.add((first.host, first.port))
        spec = _config_proxy_jump(first, options)
    return chain


def _resolved(target: NodeTarget, options: SshOptions) -> HostConfig:
    return options.resolved(target.host, target.user, target.port)


def _config_proxy_jump(target: NodeTarget, options: SshOptions) -> str | None:
    """The ssh config's ProxyJump for this host, opened by us like an explicit jump_host.

    asyncssh would open it itself, but with the default config file rather than ours
    and without the node's known_hosts.
    """
    hops = _resolved(target, options).proxy_jump
    return ",".join(str(hop) for hop in hops) if hops else None


def jump_hops(target: NodeTarget) -> list[NodeTarget]:
    """The bastions of ``target.jump_host``, first hop first.

    Each hop is ``[user@]host[:port]`` (an IPv6 address in brackets) or
    ``ssh://[user@]host[:port]``, parsed as OpenSSH parses ProxyJump; a hop's unset
    user and port come from the ssh config's block for it, as ``ssh -J`` does.

    Raises:
        ValueError: a hop OpenSSH would refuse.
    """
    return [
        replace(
            target,
            name=f"{target.name} (jump host {hop.host})",
            host=hop.host,
            port=hop.port,
            user=hop.user,
            jump_host=None,
        )
        for hop in parse_jump_chain(target.jump_host or "none")
    ]


async def _open_jumps(hops: list[NodeTarget], options: SshOptions) -> asyncssh.SSHClientConnection:
    conn: asyncssh.SSHClientConnection | None = None
    for hop in hops:
        try:
            hop_conn = await _connect_direct(hop, options, conn)
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        if conn is not None:
            hop_conn.set_tunnel(conn)
        conn = hop_conn
    assert conn is not None
    return conn


async def _connect_direct(
    target: NodeTarget, options: SshOptions, tunnel: asyncssh.SSHClientConnection | None
) -> asyncssh.SSHClientConnection:
    kwargs = _target_kwargs(target, options)
    if tunnel is not None:
        kwargs["tunnel"] = tunnel
    record_to = _accept_new_path(target, options)
    if record_to is not None:
        kwargs["known_hosts"] = None  # unknown host under accept-new: record what it presents
    resolved = _resolved(target, options)
    try:
        conn = await asyncssh.connect(
            resolved.hostname,
            resolved.port,
            options=options.host_options(target.host, target.user, target.port),
            config=None,  # the options hold the config as read for this host; no re-read
            **kwargs,
        )
    except asyncssh.HostKeyNotVerifiable:
        raise HostKeyMismatchError(await _describe_untrusted(target, options, tunnel)) from None
    if record_to is not None:
        _record_host_key(record_to, resolved, conn)
    return conn


def _target_kwargs(target: NodeTarget, options: SshOptions) -> dict[str, object]:
    kwargs: dict[str, object] = {}
    if target.identity_files:
        kwargs["client_keys"] = options.client_keys(target.identity_files)
    kwargs["known_hosts"] = _trusted(target, options)
    return kwargs


def _trusted(target: NodeTarget, options: SshOptions) -> object:
    """The known_hosts argument for asyncssh: files parsed once, keys as public keys."""
    known = target.known_hosts
    if known is None:
        return None
    if isinstance(known, tuple):
        # Private keys would never compare equal to what the server presents.
        return ([key.convert_to_public() for key in known], [], [])
    return options.known_hosts(_known_hosts_files(target, options))


def _known_hosts_files(target: NodeTarget, options: SshOptions) -> tuple[str, ...]:
    """The files host keys are looked up in: the target's, else the ssh config's as ``ssh``.

    ``ssh`` reads UserKnownHostsFile (default ``~/.ssh/known_hosts`` and
    ``~/.ssh/known_hosts2``, tokens expanded) and GlobalKnownHostsFile (default
    ``/etc/ssh/ssh_known_hosts`` and ``ssh_known_hosts2``); missing files are skipped.
    """
    if isinstance(target.known_hosts, str):
        return (os.path.expanduser(target.known_hosts),)
    return _resolved(target, options).known_hosts_files


def _known_hosts_file(target: NodeTarget, options: SshOptions) -> str | None:
    """Where accept-new records a key: the target's file, else the first UserKnownHostsFile."""
    if isinstance(target.known_hosts, KnownHostsDefault):
        user_files = _resolved(target, options).user_known_hosts
        return user_files[0] if user_files else None
    if isinstance(target.known_hosts, str):
        return os.path.expanduser(target.known_hosts)
    return None


def _accept_new_path(target: NodeTarget, options: SshOptions) -> str | None:
    """The known_hosts file to record into, when accept-new applies to this node now."""
    if target.host_key_policy != "accept-new":
        return None
    path = _known_hosts_file(target, options)
    if path is None:
        return None
    resolved = _resolved(target, options)
    known = options.known_hosts(_known_hosts_files(target, options))
    host_keys, ca_keys, *_ = known.match(resolved.hostname, "", resolved.port)
    # A host with any recorded key stays strict: accept-new never overrides a change.
    return None if host_keys or ca_keys else path


def _host_pattern(resolved: HostConfig) -> str:
    if resolved.port == 22:
        return resolved.hostname
    return f"[{resolved.hostname}]:{resolved.port}"


def _record_host_key(path: str, resolved: HostConfig, conn: asyncssh.SSHClientConnection) -> None:
    key = conn.get_server_host_key()
    if key is None:
        return
    line = key.export_public_key("openssh").decode("ascii").split()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="ascii") as known:
        known.write(f"{_host_pattern(resolved)} {line[0]} {line[1]}\n")


async def _describe_untrusted(
    target: NodeTarget, options: SshOptions, tunnel: asyncssh.SSHClientConnection | None
) -> str:
    where = f"{target.name} ({target.address})"
    resolved = _resolved(target, options)
    try:
        key = await asyncio.wait_for(
            asyncssh.get_server_host_key(
                resolved.hostname,
                resolved.port,
                tunnel=tunnel,
                options=options.host_options(target.host, target.user, target.port),
                config=None,
            ),
            options.connect_timeout,
        )
    except (OSError, asyncssh.Error, TimeoutError):
        key = None
    offered = (
        "fingerprint unavailable"
        if key is None
        else (f"server offers {key.get_algorithm()} {key.get_fingerprint()}")
    )
    return f"host key of {where} is not trusted by known_hosts: {offered}"
