"""SampleRing: preallocated columns answer as the frame-per-tick ring did, in fixed memory."""

from __future__ import annotations

from collections import deque

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from history.ring import U8_NULL, Layout
from history.sample_ring import RING_COLUMNS, SampleRing, ring_bytes

Values = dict[int, tuple[int, float, int]]  # key -> (util, power, temp) as stored


def layout_of(keys: list[int]) -> Layout:
    array = np.array(keys, dtype=np.uint32)
    contiguous = bool(np.array_equal(array, np.arange(len(keys), dtype=np.uint32)))
    return Layout(tuple(("n", k) for k in keys), array, contiguous)


def columns_of(keys: list[int], values: Values) -> dict[str, np.ndarray]:
    return {
        "util": np.array([values[k][0] for k in keys], dtype=np.uint8),
        "power_w": np.array([values[k][1] for k in keys], dtype=np.float32),
        "temp_c": np.array([values[k][2] for k in keys], dtype=np.uint8),
    }


class FramePerTickRing:
    """The previous ring's rules: every tick kept until older than the span."""

    def __init__(self, minutes: float) -> None:
        self.span_s = minutes * 60.0
        self.ticks: deque[tuple[float, Values]] = deque()

    def append(self, t: float, values: Values) -> None:
        self.ticks.append((t, values))
        while self.ticks and self.ticks[0][0] < t - self.span_s:
            self.ticks.popleft()

    def series(self, key: int, column: int, points: int) -> tuple[float | None, ...]:
        out: list[float | None] = []
        for _, values in list(self.ticks)[-points:]:
            value = values.get(key)
            stored = None if value is None else value[column]
            if stored is None or stored != stored or (column != 1 and stored == U8_NULL):
                out.append(None)
            else:
                out.append(float(np.float32(stored)) if column == 1 else float(stored))
        return tuple(out)


reading = st.tuples(
    st.integers(0, 255),  # 255 is "no reading"
    st.one_of(st.floats(0, 1000, width=32), st.just(float("nan"))),
    st.integers(0, 255),
)
tick = st.tuples(
    st.floats(1.0, 8.0),  # seconds since the previous tick (never faster than the interval)
    st.lists(st.integers(0, 11), unique=True, max_size=12),  # GPUs present in the tick
    st.lists(reading, min_size=12, max_size=12),
)


@settings(max_examples=60, deadline=None)
@given(
    ticks=st.lists(tick, min_size=8, max_size=90),
    gpus=st.integers(0, 12),
    minutes=st.sampled_from([0.1, 1.0]),  # 7 slots (reused often) or 61
)
def test_series_are_those_of_the_frame_per_tick_ring(
    ticks: list[tuple[float, list[int], list[tuple[int, float, int]]]], gpus: int, minutes: float
) -> None:
    ring, oracle = SampleRing(minutes, 1.0, gpus), FramePerTickRing(minutes)
    t = 0.0
    for gap, keys, readings in ticks:
        t += gap
        values = {k: readings[k] for k in keys}
        ring.append(t, layout_of(keys), columns_of(keys, values))
        oracle.append(t, values)
    assert len(ring) == len(oracle.ticks)
    for key in range(13):
        for index, column in enumerate(RING_COLUMNS):
            for points in (1, 5, 61, 100):
                assert ring.series(key, column, points) == oracle.series(key, index, points)


def test_the_ring_is_allocated_once_and_never_grows() -> None:
    ring = SampleRing(2, 1.0, 16)
    allocated = ring.nbytes()
    assert allocated == ring_bytes(2, 1.0, 16) == 121 * (16 * 6 + 8)
    keys = list(range(16))
    for s in range(500):
        values = {k: (s % 100, float(s), 40) for k in keys}
        ring.append(float(s), layout_of(keys), columns_of(keys, values))
    assert ring.nbytes() == allocated and len(ring) == 121 and ring.samples() == 121 * 16
    assert ring.series(3, "power_w", 2) == (498.0, 499.0)


def test_ticks_faster_than_the_interval_keep_the_newest_slots() -> None:
    ring = SampleRing(1, 1.0, 1)
    for s in range(200):
        ring.append(s * 0.5, layout_of([0]), columns_of([0], {0: (s % 200, 1.0, 30)}))
    assert len(ring) == 61  # capacity: the ring then spans 30 s, not 60
    assert ring.series(0, "util", 61) == tuple(float(s) for s in range(139, 200))


def test_a_gpu_beyond_the_expected_count_widens_the_ring_and_keeps_history() -> None:
    ring = SampleRing(1, 1.0, 2)
    ring.append(0.0, layout_of([0, 1]), columns_of([0, 1], {0: (10, 1.0, 30), 1: (11, 2.0, 31)}))
    three = {0: (20, 1.0, 30), 1: (21, 2.0, 31), 2: (22, 3.0, 32)}
    ring.append(1.0, layout_of([0, 1, 2]), columns_of([0, 1, 2], three))
    assert ring.width >= 3
    assert ring.series(1, "util", 2) == (11.0, 21.0)
    assert ring.series(2, "temp_c", 2) == (None, 32.0)


def test_a_gpu_missing_from_a_tick_reads_as_no_reading_in_a_reused_slot() -> None:
    ring = SampleRing(0.1, 1.0, 2)  # 7 slots
    both, one = [0, 1], [1]
    for s in range(7):
        ring.append(
            float(s), layout_of(both), columns_of(both, {0: (50, 1.0, 30), 1: (60, 2.0, 31)})
        )
    ring.append(7.0, layout_of(one), columns_of(one, {1: (61, 2.0, 31)}))
    assert ring.series(0, "util", 2) == (50.0, None)
    assert ring.series(1, "util", 2) == (60.0, 61.0)
