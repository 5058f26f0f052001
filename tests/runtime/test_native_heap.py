"""The C heap gives large freed buffers back (fleet.native_heap)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fleet.native_heap import MMAP_THRESHOLD_BYTES, configure_malloc, release_free_heap

MIB = 1 << 20


def resident_mib() -> float:
    """This process's resident set (/proc/self/statm, pages)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / MIB


def test_a_buffer_freed_after_a_larger_one_leaves_the_resident_set() -> None:
    """glibc's default raises its mmap threshold to a freed mapped block's size, so the
    next smaller buffer comes from the heap and stays resident after it is freed."""
    assert configure_malloc()  # glibc (Debian, the supported platform)
    big = b"\x01" * (24 * MIB)
    del big
    before = resident_mib()
    transient = b"\x02" * (12 * MIB)  # filled: every page is touched
    assert resident_mib() - before > 10
    del transient
    assert resident_mib() - before < 4


def test_trimming_gives_back_holes_inside_the_heap() -> None:
    """Freed blocks between live ones stay resident until ``malloc_trim`` returns them."""
    assert configure_malloc()
    blocks = [bytes([i % 251]) * (MMAP_THRESHOLD_BYTES // 2) for i in range(64)]  # the heap
    del blocks[::2]  # 16 MiB of holes, each between two live blocks
    before = resident_mib()
    assert release_free_heap()
    assert before - resident_mib() > 8
    assert all(b == bytes([b[0]]) * len(b) for b in blocks)  # the live blocks are intact


THREADS_ALLOCATE = """
import sys, threading
from pathlib import Path
before = set(Path("/proc/self/maps").read_text().splitlines())
if sys.argv[1] == "gpufleet":
    import gpufleet  # what every gpufleet command imports first
import polars  # its own threads start here and at its first query
polars.DataFrame({"a": list(range(100_000))}).sum()
ready = threading.Barrier(4)
held = []
def work():
    ready.wait()  # all four allocate at once, as workers rendering and writing do
    held.append([bytes(4096) for _ in range(512)])
    ready.wait()
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
after = Path("/proc/self/maps").read_text().splitlines()
# A glibc thread arena: 64 MiB reserved at a 64 MiB boundary, the part in use read-write
# and the rest an inaccessible anonymous mapping right after it, up to the boundary.
spans = {}
for line in after:
    fields = line.split()
    start, end = (int(x, 16) for x in fields[0].split("-"))
    if len(fields) == 5:
        spans[start] = (end, fields[1])
arenas = [
    start for start, (end, perms) in spans.items()
    if start % (64 << 20) == 0 and perms == "rw-p" and f"{start:x}" not in str(before)
    and spans.get(end, (0, ""))[1] == "---p" and spans[end][0] == start + (64 << 20)
]
print(len(arenas))
"""


def arenas_made_by_threads(mode: str) -> int:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = subprocess.run(
        [sys.executable, "-c", THREADS_ALLOCATE, mode],
        capture_output=True, text=True, check=True, env=env, timeout=60,
    )  # fmt: skip
    return int(run.stdout)


def test_worker_threads_of_a_gpufleet_process_share_the_one_arena() -> None:
    """Fresh processes, so no arena of an earlier thread is there to be reused; the
    setting must come before polars starts its threads (set after, 11 arenas remain)."""
    assert arenas_made_by_threads("plain") >= 1  # the behaviour the setting removes
    assert arenas_made_by_threads("gpufleet") == 0
