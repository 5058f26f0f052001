"""The C heap gives large freed buffers back (fleet.native_heap)."""

from __future__ import annotations

from pathlib import Path

from fleet.native_heap import MMAP_THRESHOLD_BYTES, pin_malloc_thresholds, release_free_heap

MIB = 1 << 20


def resident_mib() -> float:
    """This process's resident set (/proc/self/statm, pages)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / MIB


def test_a_buffer_freed_after_a_larger_one_leaves_the_resident_set() -> None:
    """glibc's default raises its mmap threshold to a freed mapped block's size, so the
    next smaller buffer comes from the heap and stays resident after it is freed."""
    assert pin_malloc_thresholds()  # glibc (Debian, the supported platform)
    big = b"\x01" * (24 * MIB)
    del big
    before = resident_mib()
    transient = b"\x02" * (12 * MIB)  # filled: every page is touched
    assert resident_mib() - before > 10
    del transient
    assert resident_mib() - before < 4


def test_trimming_gives_back_holes_inside_the_heap() -> None:
    """Freed blocks between live ones stay resident until ``malloc_trim`` returns them."""
    assert pin_malloc_thresholds()
    blocks = [bytes([i % 251]) * (MMAP_THRESHOLD_BYTES // 2) for i in range(64)]  # the heap
    del blocks[::2]  # 16 MiB of holes, each between two live blocks
    before = resident_mib()
    assert release_free_heap()
    assert before - resident_mib() > 8
    assert all(b == bytes([b[0]]) * len(b) for b in blocks)  # the live blocks are intact
