"""``%`` tokens and ``~`` in ssh config values, with the token set OpenSSH 9.2 offers."""

from __future__ import annotations

import hashlib
import ipaddress
import os
from collections.abc import Mapping, Sequence

from collectors.ssh.config_syntax import SshConfigError, expand_tilde, expand_tokens


def hostname_template(hostname: str, host: str) -> str:
    """``HostName`` with ``%h`` (the name asked for) and ``%%`` expanded, the only tokens it takes.

    Raises:
        SshConfigError: another token is used.
    """
    try:
        return expand_tokens(hostname, {"h": host, "%": "%"}, environment=False)
    except ValueError as exc:
        raise SshConfigError(f"HostName {hostname!r}: {exc}") from None


def resolve_hostname(hostname: str | None, host: str) -> str:
    """Where ``ssh`` connects: ``HostName`` expanded, else the name asked for.

    A name is lower-cased, an IP address is kept as written (as ``ssh`` does).
    """
    name = host if hostname is None else hostname_template(hostname, host)
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return name.lower()
    return name


def host_tokens(
    *,
    host: str,
    hostname: str,
    port: int,
    user: str,
    home: str,
    local_user: str,
    alias: str,
    local_host: str,
) -> dict[str, str]:
    """The tokens of ``IdentityFile`` and ``UserKnownHostsFile`` (ssh_config(5) TOKENS)."""
    return {
        "%": "%",
        "C": hashlib.sha1(f"{local_host}{hostname}{port}{user}".encode()).hexdigest(),
        "d": home,
        "h": hostname,
        "i": str(os.getuid()),
        "k": alias,
        "L": local_host.partition(".")[0],
        "l": local_host,
        "n": host,
        "p": str(port),
        "r": user,
        "u": local_user,
    }


def expand_path_list(
    paths: Sequence[str], tokens: Mapping[str, str], home: str, keyword: str
) -> tuple[str, ...]:
    """Each path with ``~`` then tokens and ``${VAR}`` expanded, as OpenSSH orders them.

    Raises:
        SshConfigError: an unknown token, an unset variable or an unknown ``~user``.
    """
    expanded = []
    for path in paths:
        try:
            expanded.append(expand_tokens(expand_tilde(path, home), tokens))
        except ValueError as exc:
            raise SshConfigError(f"{keyword} {path!r}: {exc}") from None
    return tuple(expanded)
