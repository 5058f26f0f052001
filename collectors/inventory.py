"""Which nodes exist: hostnames, hostlist expressions and hostfiles, validated.

Names reach asyncssh (and, through ``~/.ssh/config``, possibly a ProxyCommand), so
anything that is not a plain RFC 1123 hostname or an IP literal is refused here,
before a connection is ever attempted.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from pathlib import Path

from ClusterShell.NodeSet import NodeSet, NodeSetException

# One RFC 1123 label: letters, digits and inner hyphens, 1 to 63 characters.
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")
_MAX_NAME = 253


class InventoryError(ValueError):
    """A hostname, hostlist expression or hostfile line is not usable."""


def validate_hostname(name: str) -> str:
    """Return ``name`` when it is an RFC 1123 hostname or an IPv4/IPv6 literal.

    IPv6 literals may be written with or without brackets; the brackets are removed.

    Raises:
        InventoryError: the name is empty, too long, or has a character a hostname
            cannot have (spaces, shell metacharacters, underscores, ...).
    """
    candidate = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        address = ipaddress.ip_address(candidate)
    except ValueError:
        address = None
    if name != candidate and not isinstance(address, ipaddress.IPv6Address):
        raise InventoryError(f"{name!r} is bracketed but not an IPv6 address")
    if address is not None:
        return str(address)
    if not name or len(name) > _MAX_NAME:
        raise InventoryError(f"{name!r} is not a hostname: length must be 1 to {_MAX_NAME}")
    for label in name.rstrip(".").split("."):
        if not _LABEL.match(label):
            raise InventoryError(
                f"{name!r} is not a hostname: label {label!r} must be 1-63 letters, "
                "digits or inner hyphens (RFC 1123)"
            )
    return name


def expand_hosts(expressions: Iterable[str]) -> list[str]:
    """Expand names and hostlist expressions (``gpu-[001-128]``) into validated hostnames.

    The order of the expressions is kept (each expression expands in its own
    sorted order) and duplicates are dropped.

    Raises:
        InventoryError: an expression does not parse or names an invalid host.
    """
    seen: dict[str, None] = {}
    for expression in expressions:
        for name in _expand_one(expression):
            seen.setdefault(name, None)
    return list(seen)


def _expand_one(expression: str) -> list[str]:
    text = expression.strip()
    if not text:
        raise InventoryError("empty host expression")
    if _is_ip_literal(text):
        # NodeSet would split an IPv6 literal at its colons' neighbours: keep it whole.
        return [validate_hostname(text)]
    try:
        names = list(NodeSet(text))
    except NodeSetException as exc:
        raise InventoryError(f"{expression!r} is not a hostlist expression: {exc}") from None
    return [validate_hostname(name) for name in names]


def _is_ip_literal(text: str) -> bool:
    candidate = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return True


def parse_hostfile(text: str, source: str = "<hostfile>") -> list[str]:
    """Read a hostfile: one name or hostlist expression per line.

    ``#`` starts a comment (whole line or trailing); blank lines are ignored.

    Raises:
        InventoryError: a line does not parse; the message names ``source`` and the line.
    """
    expressions = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            _expand_one(line)
        except InventoryError as exc:
            raise InventoryError(f"{source}:{number}: {exc}") from None
        expressions.append(line)
    return expand_hosts(expressions)


def read_hostfile(path: Path) -> list[str]:
    """Read and expand the hostfile at ``path`` (see :func:`parse_hostfile`).

    Raises:
        InventoryError: the file cannot be read or a line does not parse.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read the hostfile: {exc.strerror}") from None
    return parse_hostfile(text, source=str(path))


def matches(expression: str, name: str) -> bool:
    """Whether hostname ``name`` is one of the hosts of ``expression``."""
    return name in _expand_one(expression)


def validate_jump_hosts(spec: str) -> str:
    """Check a ProxyJump-style ``[user@]host[:port][,...]`` bastion chain; return it unchanged.

    Raises:
        InventoryError: a hop has an empty user, a bad hostname or a bad port.
    """
    for hop in spec.split(","):
        user, _, address = hop.rpartition("@")
        if "@" in hop and not re.fullmatch(r"[A-Za-z0-9._][A-Za-z0-9._-]*", user):
            raise InventoryError(f"jump host {hop!r}: {user!r} is not a user name")
        if address.count(":") > 1:
            # asyncssh splits a hop at its last colon: an IPv6 literal cannot be a hop.
            raise InventoryError(f"jump host {hop!r}: IPv6 literals are not supported here")
        host, _, port = address.rpartition(":") if ":" in address else (address, "", "")
        if port and not (port.isdigit() and 1 <= int(port) <= 65535):
            raise InventoryError(f"jump host {hop!r}: port must be 1-65535")
        validate_hostname(host)
    return spec
