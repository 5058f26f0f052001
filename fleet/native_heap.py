"""The C heap under the controller: one arena, and large transient buffers go back.

glibc's ``malloc`` gives a request above its mmap threshold a mapping of its own,
returned to the system when freed. By default the threshold is dynamic: freeing such a
block raises it to the block's size (up to 32 MiB on 64-bit), so from then on buffers
of that size (a /metrics body of several MiB, a parquet write buffer, a tick's
columns) come from the heap, where freed space stays resident until the top of the
heap is free. Setting the threshold explicitly turns that adjustment off (glibc,
``mallopt(3)``: the dynamic threshold is disabled once M_MMAP_THRESHOLD, M_TRIM_THRESHOLD,
M_TOP_PAD or M_MMAP_MAX is set). ``malloc_trim(3)`` (glibc 2.8 and later) gives back
whole free pages inside the heap too, not only at its top.

Elsewhere (musl, macOS) the functions are absent and both calls do nothing.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # glibc malloc.h
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
# One arena for every thread. By default glibc gives each thread that allocates an arena
# of its own (up to 8 per core), a 64 MiB heap whose free space stays resident: the
# /metrics render and history writes on worker threads kept ~64 MiB each (four arenas,
# 255 MiB, in a 1,000-node serve). The GIL serialises most allocations anyway.
ARENAS = 1
# Above this a buffer gets its own mapping: /metrics bodies and write buffers (MiBs) do;
# a tick's per-fleet arrays (tens to hundreds of KiB) stay in the heap, reused each tick.
MMAP_THRESHOLD_BYTES = 1 << 20
# Free space at the top of the heap above this is given back at once.
TRIM_THRESHOLD_BYTES = 4 << 20


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None)
    except OSError:  # no dynamic C library to ask (a static build)
        return None


def configure_malloc() -> bool:
    """One arena, fixed mmap and trim thresholds (True when this libc has ``mallopt``).

    Call it before the process starts threads: an arena a thread already has stays.
    """
    libc = _libc()
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    ok = mallopt(M_ARENA_MAX, ARENAS) == 1
    ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1 and ok
    ok = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and ok
    if not ok:
        log.debug("mallopt refused the heap thresholds; keeping glibc's defaults")
    return ok


def release_free_heap() -> bool:
    """Give whole free pages of the C heap back to the system (True if any went)."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    trim.argtypes = (ctypes.c_size_t,)
    return bool(trim(0))
