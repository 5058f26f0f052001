"""A port's hardware counters (mlx5 / EFA ``hw_counters``) as the state keeps them.

Each slow tick every port of every node sends the same dozen counter names, and each
decoded dict holds fresh copies of them: a port kept ~1.7 KB for its counters until the
next slow tick (~13 MiB at 1,000 nodes of 8 ports), two thirds of it the names and the
dict, most of the rest an int object per value. Kept here: one shared copy of the names
and the values in an unsigned 64-bit array (a tuple where one is negative), read as the
mapping the dict was: the same ints, in the same order.
"""

from __future__ import annotations

from array import array
from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView

from fleet.state.kept import KeptCopies

_NAMES: KeptCopies[tuple[str, ...]] = KeptCopies(256)


class HwCounters(Mapping[str, int]):
    """Counter names (a copy shared by every port that sends them) and their values."""

    __slots__ = ("counts", "names")

    def __init__(self, names: tuple[str, ...], counts: Sequence[int]) -> None:
        self.names, self.counts = names, counts

    def __getitem__(self, name: str) -> int:
        try:
            return self.counts[self.names.index(name)]
        except ValueError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def values(self) -> ValuesView[int]:
        """The values in the names' order (one pass, no lookup by name)."""
        return _Counts(self)

    def items(self) -> ItemsView[str, int]:
        """(name, value) in the order sent (one pass, no lookup by name)."""
        return _Pairs(self)

    def __repr__(self) -> str:
        return f"HwCounters({dict(self.items())!r})"


class _Counts(ValuesView[int]):
    __slots__ = ("_counts",)

    def __init__(self, hw: HwCounters) -> None:
        super().__init__(hw)
        self._counts = hw.counts

    def __iter__(self) -> Iterator[int]:
        return iter(self._counts)


class _Pairs(ItemsView[str, int]):
    __slots__ = ("_hw",)

    def __init__(self, hw: HwCounters) -> None:
        super().__init__(hw)
        self._hw = hw

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return zip(self._hw.names, self._hw.counts, strict=True)


def kept_counters(counters: Mapping[str, int]) -> HwCounters:
    """``counters`` as kept: the first copy of their names the fleet kept, their values."""
    values = tuple(counters.values())
    counts: Sequence[int]
    try:
        counts = array("Q", values)  # the decoder bounds them to 64 bits
    except OverflowError:  # a negative value: kept as sent
        counts = values
    return HwCounters(_NAMES.one(tuple(counters)), counts)
