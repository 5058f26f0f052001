"""A small hostlist expander: ``node-[001-004,010]``, ``a[1-2]b[3-4]``, ``x,y``.

The dashboard may not import collectors (where ClusterShell lives), and a filter only
needs expansion, so this covers bracket ranges with zero padding and comma lists.
"""

from __future__ import annotations

import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
MAX_HOSTS = 100_000


class HostlistError(ValueError):
    """The expression is not a hostlist."""


def _split_top(expr: str) -> list[str]:
    """Split on commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(expr):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in {expr!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in {expr!r}")
        elif ch == "," and depth == 0:
            parts.append(expr[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"unclosed '[' in {expr!r}")
    parts.append(expr[start:])
    return [p.strip() for p in parts if p.strip()]


def _expand_ranges(body: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        m = _RANGE.match(item.strip())
        if not m:
            raise HostlistError(f"bad range {item!r}")
        lo_s, hi_s = m.group(1), m.group(2) or m.group(1)
        lo, hi = int(lo_s), int(hi_s)
        if hi < lo:
            raise HostlistError(f"range {item!r} runs backwards")
        if hi - lo > MAX_HOSTS:
            raise HostlistError(f"range {item!r} is too large")
        width = len(lo_s) if lo_s.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return out


def _expand_one(pattern: str) -> list[str]:
    m = re.search(r"\[([^\]]*)\]", pattern)
    if not m:
        return [pattern]
    head, tail = pattern[: m.start()], pattern[m.end() :]
    tails = _expand_one(tail)
    return [head + mid + t for mid in _expand_ranges(m.group(1)) for t in tails]


def expand(expr: str) -> list[str]:
    """Every host the expression names, in order. Raises HostlistError when malformed."""
    hosts: list[str] = []
    for part in _split_top(expr):
        hosts.extend(_expand_one(part))
        if len(hosts) > MAX_HOSTS:
            raise HostlistError("hostlist names too many hosts")
    return hosts


def looks_like_hostlist(text: str) -> bool:
    return "[" in text or "," in text
