"""Texts kept between scrapes (issue #11): reused only when the values would be written
the same, byte for byte, whatever ``==`` says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fleet.metrics.reuse import KeptTexts, exact_key


def _written(values: tuple[Any, ...]) -> Callable[[], str]:
    return lambda: " ".join(map(repr, values))


def _scrapes(columns: list[tuple[Any, ...]]) -> list[bytes]:
    kept = KeptTexts()
    return [kept.text(0, values, _written(values)) for values in columns]


@pytest.mark.parametrize(
    ("held", "then"),
    [
        ((0, 1, 2), (0.0, 1, 2)),  # 0 == 0.0, but "0" is not "0.0"
        ((0.0, 1.5), (-0.0, 1.5)),  # 0.0 == -0.0, but "-0.0" is written
        ((1, 0), (True, False)),  # 1 == True
        ((None, 2), (2, None)),  # the same values on other entities
    ],
)
def test_a_column_equal_but_written_otherwise_is_written_anew(
    held: tuple[Any, ...], then: tuple[Any, ...]
) -> None:
    # Held still for three scrapes (kept from the second), then equal by == but not alike.
    texts = _scrapes([held, held, held, then])
    assert texts[2] == _written(held)().encode()
    assert texts[3] == _written(then)().encode()


def test_a_column_that_held_still_is_reused_and_one_that_moves_is_not() -> None:
    calls: list[tuple[Any, ...]] = []
    kept = KeptTexts()

    def render(values: tuple[Any, ...]) -> Callable[[], str]:
        def rendered() -> str:
            calls.append(values)
            return _written(values)()

        return rendered

    columns = [(1.5, 2.5), (1.5, 2.5), (1.5, 2.5), (1.5, 2.5), (1.5, 3.5), (1.5, 3.5)]
    texts = [kept.text(0, values, render(values)) for values in columns]
    assert texts == [_written(values)().encode() for values in columns]
    # Rendered the first two times (kept after the second), then when it moved, and once
    # more to be kept again.
    assert calls == [(1.5, 2.5), (1.5, 2.5), (1.5, 3.5), (1.5, 3.5)]


def test_the_exact_key_tells_types_and_signs_apart() -> None:
    assert exact_key((0, 1)) == exact_key((0, 1))
    assert exact_key((0, 1)) != exact_key((0.0, 1.0))
    assert exact_key((0.0,)) != exact_key((-0.0,))
    assert exact_key((1, None)) != exact_key((None, 1))
    assert exact_key((1, 1.0)) is None  # mixed: never reused
