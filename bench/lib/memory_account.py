"""Where a controller's memory is, for bench/lib/fleet_probe.py's debug mode.

Three views, each answering a different question:

- :func:`mappings`: the process's resident memory by kind of mapping (/proc/PID/smaps):
  the glibc heap and anonymous mappings (Python objects, numpy buffers, the allocators
  of polars and other native libraries) against the code and data of shared libraries;
- :func:`components`: what each part of the runtime keeps reachable (Python objects by
  ``sys.getsizeof``, numpy buffers by ``nbytes``, polars frames by ``estimated_size``),
  walked from named roots in a fixed order so a shared object counts for the first
  root that reaches it;
- tracemalloc (in fleet_probe): which file and line allocated what is alive.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import types
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

MIB = 1 << 20
_SKIP = (types.ModuleType, type, types.FunctionType, types.CodeType, types.BuiltinFunctionType)


def mappings(pid: int) -> dict[str, float]:
    """Resident MiB by mapping kind: heap, anonymous, each big shared library, the rest."""
    rss: Counter[str] = Counter()
    name = "?"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if not head:
            continue
        if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            path = head[5] if len(head) > 5 else ""
            if path == "[heap]":
                name = "heap (glibc brk)"
            elif not path:
                name = "anonymous mmaps"
            elif path.startswith("["):
                name = path
            else:
                name = Path(path).name
        elif head[0] == "Rss:":
            rss[name] += int(head[1])
    out = {k: round(v / 1024, 1) for k, v in rss.most_common() if v >= 2048}
    out["other mappings"] = round(sum(v for k, v in rss.items() if v < 2048) / 1024, 1)
    out["total"] = round(sum(rss.values()) / 1024, 1)
    return out


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in [
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        ]
    ]


def glibc_heap() -> dict[str, float]:
    """This process's glibc heap by glibc's own count (``mallinfo2``, glibc 2.33+), MiB.

    ``in use`` against ``free`` inside the heap tells fragmentation (free chunks that
    pin their pages) from live native allocations; empty where the call is missing.
    """
    info = getattr(ctypes.CDLL(None), "mallinfo2", None)
    if info is None:
        return {}
    info.restype = _MallInfo2
    got = info()
    return {
        "heap": round(got.arena / MIB, 1),
        "in use": round(got.uordblks / MIB, 1),
        "free": round(got.fordblks / MIB, 1),
        "free chunks": float(got.ordblks),
        "mmapped": round(got.hblkhd / MIB, 1),
    }


def _own_bytes(obj: Any) -> int:
    if isinstance(obj, np.ndarray):
        return sys.getsizeof(obj) if obj.base is not None else obj.nbytes + 112
    estimated = getattr(obj, "estimated_size", None)
    if estimated is not None and type(obj).__module__.startswith("polars"):
        try:
            return int(estimated())
        except Exception:  # a lazy frame or an odd type: count the wrapper only
            return sys.getsizeof(obj)
    try:
        return sys.getsizeof(obj)
    except TypeError:
        return 0


def walk(
    root: Any, seen: set[int], by_type: tuple[Counter[str], Counter[str]] | None = None
) -> tuple[int, int]:
    """Bytes and objects reachable from ``root`` not already in ``seen``; with
    ``by_type``, also added up per type name there (bytes, objects)."""
    total = count = 0
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SKIP):
            continue
        seen.add(id(obj))
        size = _own_bytes(obj)
        total += size
        count += 1
        if by_type is not None:
            by_type[0][type(obj).__name__] += size
            by_type[1][type(obj).__name__] += 1
        if isinstance(obj, np.ndarray) or type(obj).__module__.startswith("polars"):
            continue  # buffers counted above; their referents are dtypes and bases
        stack.extend(gc.get_referents(obj))
    return total, count


def components(roots: Iterable[tuple[str, Any]]) -> dict[str, tuple[float, int]]:
    """MiB and object count reachable from each root (first root wins a shared object)."""
    seen: set[int] = set()
    out: dict[str, tuple[float, int]] = {}
    for name, root in roots:
        size, count = walk(root, seen)
        out[name] = (round(size / MIB, 1), count)
    return out


def runtime_roots(runtime: Any) -> list[tuple[str, Any]]:
    """The runtime's parts in the order their memory is attributed."""
    history = runtime.history
    roots: list[tuple[str, Any]] = [
        ("history ring", history.ring),
        ("history minute rollup", history._minute),
        ("history registry", history.registry),
        ("history books", (history.states, history.coverage, history.gaps)),
        ("history minute series", history.series),
        # Before the recorder's rest: it holds the previous tick's nodes, the state's own.
        ("latest snapshot", runtime._latest),
        ("fleet state", runtime._state),
        ("history (rest)", history),
        ("ssh fleet (connections)", runtime._ssh),
        ("operator desk (event log)", runtime.desk),
        ("drift, link events, xids", (runtime.drift, runtime.link_events, runtime.xid_repeats)),
        ("prober", runtime.prober),
        ("listeners (metrics, probes)", runtime._listeners),
    ]
    metrics = [o for o in gc.get_objects() if type(o).__module__.startswith("exporter")]
    roots.append(("metrics objects (gc-found)", metrics))
    return roots
