"""Bounded reading of operator files: size caps, UTF-8 and TOML nesting, checked once.

A config, hostfile or scenario path may name anything (``-c /dev/zero``, a FIFO, a
multi-gigabyte log): files are read up to a cap and refused beyond it, never read
whole first. TOML nested deeper than any real file is refused before a parser or a
validator recurses into it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

MAX_CONFIG_BYTES = 1 << 20  # a commented 1,000-override config is ~100 kB
MAX_HOSTFILE_BYTES = 8 << 20  # 20,000 names with comments fit in well under 1 MiB
MAX_TOML_DEPTH = 32  # tables and arrays, counted together; real files stay under 6


class InputLimitError(ValueError):
    """A file is over its size cap, not UTF-8, or nested too deeply (message: the why)."""


def read_bounded_text(path: Path, limit: int) -> str:
    """The UTF-8 text of ``path``, reading at most ``limit`` bytes.

    Raises:
        OSError: the file cannot be opened or read.
        InputLimitError: the file holds more than ``limit`` bytes or is not UTF-8.
    """
    with open(path, "rb") as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise InputLimitError(f"larger than the {_size(limit)} cap")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputLimitError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def loads_bounded_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads`` that refuses nesting deeper than :data:`MAX_TOML_DEPTH`.

    Raises:
        tomllib.TOMLDecodeError: the text is not TOML.
        InputLimitError: tables and arrays nest too deeply.
    """
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise InputLimitError(f"nested deeper than {MAX_TOML_DEPTH} levels") from None
    if _depth(data) > MAX_TOML_DEPTH:
        raise InputLimitError(f"nested deeper than {MAX_TOML_DEPTH} levels")
    return data


def _depth(data: object) -> int:
    """Nesting depth of dicts and lists, without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level <= MAX_TOML_DEPTH:  # deeper is already too deep: no need to look further
            stack.extend((child, level + 1) for child in children)
    return deepest


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and limit % (1 << 20) == 0 else f"{limit} bytes"
