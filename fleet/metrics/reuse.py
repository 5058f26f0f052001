"""A column's text kept between scrapes while its values hold still, compared exactly.

Many columns of a large fleet do not move between two scrapes (a performance state, the
clock-event mask, a link's rate, an error rate of zero), and comparing a column with the
last one costs a fraction of formatting it. Equal is not enough: ``0 == 0.0 == False``
and ``0.0 == -0.0``, yet each writes other text. :func:`exact_key` is equal for two
columns only when every value would be written the same (same types, floats bit for bit).

A column's text is kept only once it has held still from one scrape to the next (the
hash of its values is kept meanwhile, a few bytes), so the texts of columns that move
every tick are not held between scrapes, and cost one hash of their values.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Hashable
from itertools import compress, repeat
from operator import is_not
from typing import Any

_NONE = type(None)
_INTS = frozenset((int,))
_BOOLS = frozenset((bool,))
_FLOATS = frozenset((float,))


def exact_key(values: tuple[Any, ...]) -> Hashable | None:
    """A key equal for two columns exactly when they are written the same; None for a
    column of other types (never reused)."""
    kinds = set(map(type, values))
    present: tuple[bool, ...] | None = None
    if _NONE in kinds:
        kinds.discard(_NONE)
        present = tuple(map(is_not, values, repeat(None)))
        values = tuple(compress(values, present))
    if kinds <= _INTS:  # equal ints are written the same
        return present, int, values
    if kinds == _BOOLS:  # so are equal bools, but not as the ints they equal
        return present, bool, values
    if kinds == _FLOATS:  # bit for bit: 0.0 and -0.0 differ, so do NaNs of either sign
        return present, float, array("d", values).tobytes()
    return None


class KeptTexts:
    """Per column (by index), the text of its last values while they hold still."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        # index -> (hash of the values, exact key and text once held still, else None)
        self._kept: dict[int, tuple[int, Hashable | None, bytes | None]] = {}

    def text(self, i: int, values: tuple[Any, ...], render: Callable[[], str]) -> bytes:
        """Column ``i``'s text for ``values``: the kept one when they are the last ones
        exactly, else ``render()`` encoded."""
        kept = self._kept.get(i)
        if kept is not None and kept[2] is not None:  # a text is kept: compare exactly
            key = exact_key(values)
            if key is not None and key == kept[1]:
                return kept[2]
        text = render().encode("utf-8")
        # A moving column costs one hash (in C); the exact key only once it held still.
        try:
            digest = hash(values)
        except TypeError:  # an unhashable value: never kept
            self._kept.pop(i, None)
            return text
        key = exact_key(values) if kept is not None and kept[0] == digest else None
        self._kept[i] = (digest, key, text if key is not None else None)
        return text
