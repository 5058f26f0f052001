"""Port and GPU slot arrays grow by a quarter, keep every row, and stay mostly used."""

from __future__ import annotations

import numpy as np

from fleet.settings.health_section import HealthSection
from fleet.state.capacity import grown
from fleet.state.columns import GpuArena
from fleet.state.port_columns import PortColumns


def test_a_fleet_of_ports_past_the_first_guess_leaves_under_a_fifth_unused() -> None:
    columns = PortColumns(HealthSection(), capacity=64)
    # One node's ports at a time, as sessions start: 1,000 nodes of 8 IB ports and a NIC.
    for _ in range(9_000):
        slot = columns.allocate()
        columns.last[slot, 0] = slot  # a reading that each growth must carry over
    rows = len(columns.applied)
    assert 9_000 <= rows < 9_000 * 1.25  # doubling held them in 16,384 rows
    assert all(len(a) == rows for a in (columns.last, columns.rate, columns.seen, columns.top))
    np.testing.assert_array_equal(columns.last[:9_000, 0], np.arange(9_000))
    assert np.isnan(columns.last[9_000:, 0]).all()  # the rows not yet taken: no reading


def test_gpu_slots_grow_by_a_quarter_and_keep_their_readings() -> None:
    arena = GpuArena(capacity=64)
    starts = [arena.allocate(8) for _ in range(1_000)]
    for start in starts:
        arena.fast[start : start + 8, 0] = start
    rows = len(arena.verdict)
    assert 8_000 <= rows < 8_000 * 1.25 and arena.fast.shape[0] == rows
    assert starts == list(range(0, 8_000, 8))
    np.testing.assert_array_equal(arena.fast[:8_000:8, 0], np.arange(0, 8_000, 8))


def test_growth_meets_what_is_needed_even_past_a_quarter() -> None:
    assert grown(64, 65) == 80
    assert grown(64, 500) == 500  # a session with many GPUs at once
    assert grown(0, 1) == 16  # an empty array still grows
