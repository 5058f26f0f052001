"""Counter deltas and rates: resets, saturation, gaps."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fleet.counters import Counter, advance, ceiling


def test_rate_is_delta_over_elapsed_time() -> None:
    counter = Counter()
    counter.update(100, 10.0)
    counter.update(160, 12.0)
    assert (counter.delta, counter.rate) == (60, 30.0)


def test_first_reading_has_no_delta_or_rate() -> None:
    counter = Counter()
    counter.update(5, 1.0)
    assert (counter.delta, counter.rate, counter.total) == (None, None, 0)


def test_a_decrease_is_a_reset_with_unknown_rate() -> None:
    counter = Counter()
    counter.update(1_000, 1.0)
    counter.update(3, 2.0)
    assert (counter.delta, counter.rate) == (3, None)
    counter.update(5, 3.0)
    assert (counter.delta, counter.rate, counter.total) == (2, 2.0, 5)


def test_a_pegged_counter_means_unknown_rate_not_a_huge_one() -> None:
    counter = Counter(top=ceiling(16))
    counter.update(65_000, 1.0)
    counter.update(65_535, 2.0)
    assert counter.saturated
    assert counter.rate is None
    assert counter.delta == 535  # a lower bound: at least that many
    counter.update(65_535, 3.0)
    assert (counter.delta, counter.rate, counter.saturated) == (0, None, True)


def test_cleared_after_saturation_counts_as_reset() -> None:
    counter = Counter(top=ceiling(8))
    counter.update(255, 1.0)
    counter.update(1, 2.0)
    assert (counter.delta, counter.rate, counter.saturated) == (1, None, False)


def test_failed_read_keeps_the_baseline_for_the_next_good_one() -> None:
    counter = Counter()
    counter.update(10, 1.0)
    counter.update(None, 2.0)
    assert (counter.delta, counter.rate) == (None, None)
    counter.update(16, 3.0)
    assert (counter.delta, counter.rate) == (6, 3.0)


def test_no_time_passed_means_no_rate() -> None:
    assert advance(1, 5.0, 4, 5.0, None).rate is None


def test_64_bit_counters_never_saturate() -> None:
    assert ceiling(64) is None and ceiling(None) is None and ceiling(4) == 15


@given(
    st.lists(
        st.tuples(st.integers(0, 2**20), st.floats(0.0, 5.0, allow_nan=False)),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([None, 4, 8, 16, 32]),
)
def test_deltas_and_rates_are_never_negative(
    readings: list[tuple[int, float]], bits: int | None
) -> None:
    top = ceiling(bits)
    counter = Counter(top=top)
    t = 0.0
    for value, step in readings:
        t += step
        counter.update(min(value, top) if top is not None else value, t)
        assert counter.delta is None or counter.delta >= 0
        assert counter.rate is None or counter.rate >= 0
        if counter.saturated:
            assert counter.rate is None
    assert counter.total >= 0


@given(
    st.lists(st.tuples(st.integers(0, 300), st.floats(0.0, 3.0, allow_nan=False)), max_size=30),
    st.sampled_from([None, 8]),
)
def test_counter_update_agrees_with_advance(
    readings: list[tuple[int, float]], bits: int | None
) -> None:
    top = ceiling(bits)
    counter = Counter(top=top)
    t = 0.0
    for value, step in readings:
        t += step
        value = min(value, top) if top is not None else value
        expected = advance(counter.value, counter.at, value, t, top)
        counter.update(value, t)
        assert (counter.delta, counter.rate, counter.saturated) == (
            expected.delta,
            expected.rate,
            expected.saturated,
        )
