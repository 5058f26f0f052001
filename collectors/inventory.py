"""Which nodes exist: hostnames, hostlist expressions and hostfiles, validated.

Names reach asyncssh (and, through ``~/.ssh/config``, possibly a ProxyCommand), so
anything that is not a plain RFC 1123 hostname or an IP literal is refused here,
before a connection is ever attempted.

Expansion is bounded: ``gpu-[1-10000000]`` would build ten million names (ClusterShell
expands eagerly), so the size of every expression is counted from its brackets first
and an inventory beyond the host cap is refused before anything is expanded.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from pathlib import Path

from ClusterShell.NodeSet import NodeSet, NodeSetException

from collectors.errors import FleetError
from collectors.limits import MAX_HOSTFILE_BYTES, InputLimitError, read_bounded_text

# One RFC 1123 label: letters, digits and inner hyphens, 1 to 63 characters.
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")
_MAX_NAME = 253
# Hosts one fleet may have unless the config says otherwise ([fleet] max_hosts).
DEFAULT_MAX_HOSTS = 20_000
# Operators between the parts of a hostlist expression (union, difference, ...).
_OPERATORS = ",!&^"
_RANGE = re.compile(r"\s*(\d{1,18})\s*(?:-\s*(\d{1,18})\s*(?:/\s*(\d{1,18})\s*)?)?")


class InventoryError(FleetError, ValueError):
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


def expand_hosts(expressions: Iterable[str], limit: int = DEFAULT_MAX_HOSTS) -> list[str]:
    """Expand names and hostlist expressions (``gpu-[001-128]``) into validated hostnames.

    The order of the expressions is kept (each expression expands in its own
    sorted order) and duplicates are dropped.

    Args:
        expressions: host names and hostlist expressions.
        limit: the most hosts they may name together; checked before expanding.

    Raises:
        InventoryError: an expression does not parse, names an invalid host, or the
            expressions name more than ``limit`` hosts.
    """
    seen: dict[str, None] = {}
    for expression in expressions:
        for name in _expand_one(expression, limit - len(seen), limit):
            seen.setdefault(name, None)
    return list(seen)


def host_count_bound(expression: str) -> int:
    """At most how many hosts ``expression`` names, counted from its brackets.

    Exact for unions of ranges (``gpu-[001-128],cpu-[1-4]``); an upper bound where
    parts are subtracted or intersected. Nothing is expanded.
    """
    total = 0
    for part in _top_level_parts(expression):
        count = 1
        for group in re.findall(r"\[([^\[\]]*)\]", part):
            count *= _range_count(group)
        total += count
    return total


def _top_level_parts(expression: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(expression):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif char in _OPERATORS and depth == 0:
            parts.append(expression[start:i])
            start = i + 1
    parts.append(expression[start:])
    return [part for part in parts if part.strip()]


def _range_count(group: str) -> int:
    count = 0
    for item in group.split(","):
        match = _RANGE.fullmatch(item)
        if match is None:
            count += 1  # not a range NodeSet understands: it will say so when parsing
            continue
        first, last, step = match.groups()
        if last is None:
            count += 1
        else:
            count += max(0, (int(last) - int(first)) // max(1, int(step or 1)) + 1)
    return count


def _expand_one(
    expression: str, room: int = DEFAULT_MAX_HOSTS, cap: int | None = None
) -> list[str]:
    text = expression.strip()
    if not text:
        raise InventoryError("empty host expression")
    if _is_ip_literal(text):
        # NodeSet would split an IPv6 literal at its colons' neighbours: keep it whole.
        return [validate_hostname(text)]
    if "@" in text:
        # Node groups come from ClusterShell's own configuration files, outside ours.
        raise InventoryError(f"{expression!r}: node groups (@name) are not supported")
    bound = host_count_bound(text)
    if bound > room:
        cap = room if cap is None else cap
        raise InventoryError(
            f"{_shown(expression)} names {bound:,} hosts; the fleet may have at most "
            f"{cap:,} (raise [fleet] max_hosts to allow more)"
        )
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


def parse_hostfile(
    text: str, source: str = "<hostfile>", limit: int = DEFAULT_MAX_HOSTS
) -> list[str]:
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
            _expand_one(line, limit)
        except InventoryError as exc:
            raise InventoryError(f"{source}:{number}: {exc}") from None
        expressions.append(line)
    return expand_hosts(expressions, limit)


def read_hostfile(path: Path, limit: int = DEFAULT_MAX_HOSTS) -> list[str]:
    """Read and expand the hostfile at ``path`` (see :func:`parse_hostfile`).

    Raises:
        InventoryError: the file cannot be read or a line does not parse.
    """
    try:
        text = read_bounded_text(path, MAX_HOSTFILE_BYTES)
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read the hostfile: {exc.strerror}") from None
    except InputLimitError as exc:
        raise InventoryError(f"{path}: hostfile {exc}") from None
    return parse_hostfile(text, source=str(path), limit=limit)


def _shown(expression: str) -> str:
    return repr(expression if len(expression) <= 80 else expression[:79] + "\u2026")


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
