"""A port's hardware counters (mlx5 / EFA ``hw_counters``) as the state keeps them.

Each slow tick every port of every node sends the same dozen counter names, and each
decoded dict holds fresh copies of them: a port kept ~1.7 KB for its counters until the
next slow tick (~13 MiB at 1,000 nodes of 8 ports), two thirds of it the names and the
dict, most of the rest an int object per value. Kept here: one shared copy of the names
and the values packed as unsigned 64-bit integers in ``bytes`` (a tuple of ints where
one is negative), read as the mapping the dict was: the same ints, in the same order.

None of it is tracked by the cyclic collector: it refers to nothing but strings and
numbers, so it cannot be part of a cycle. A tracked holder and an ``array`` per port
were 16,000 objects at 1,000 nodes of 8 ports that every full collection scanned
(bench/bench_gc_tracked.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import cast

import msgspec

from fleet.state.kept import KeptCopies

_NAMES: KeptCopies[tuple[str, ...]] = KeptCopies(256)


class HwCounters(msgspec.Struct, frozen=True, gc=False, eq=False):
    """Counter names (a copy shared by every port that sends them) and their values.

    A read-only mapping of name to count (registered as a ``Mapping``; a Struct cannot
    also inherit the ABC's methods, so they are written out here). ``packed``: the
    counts as 'Q' bytes, or the ints as sent where one is negative.
    """

    names: tuple[str, ...]
    packed: bytes | tuple[int, ...]

    @property
    def counts(self) -> Sequence[int]:
        """The values in the names' order."""
        packed = self.packed
        return memoryview(packed).cast("Q") if type(packed) is bytes else packed

    def __getitem__(self, name: str) -> int:
        try:
            at = self.names.index(name)
        except ValueError:
            raise KeyError(name) from None
        return self.counts[at]

    def get(self, name: str, default: int | None = None) -> int | None:
        """The count of ``name``, or ``default``."""
        return self[name] if name in self.names else default

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def keys(self) -> tuple[str, ...]:
        """The names in the order sent."""
        return self.names

    def values(self) -> Sequence[int]:
        """The values in the names' order (one pass, no lookup by name)."""
        return self.counts

    def items(self) -> zip[tuple[str, int]]:
        """(name, value) in the order sent (one pass, no lookup by name)."""
        return zip(self.names, self.counts, strict=True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return dict(self.items()) == dict(other.items())

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # a mapping, as the dict it stands for

    def __repr__(self) -> str:
        return f"HwCounters({dict(self.items())!r})"


Mapping.register(HwCounters)


def kept_counters(counters: Mapping[str, int]) -> Mapping[str, int]:
    """``counters`` as kept (a :class:`HwCounters`): the first copy of their names the
    fleet kept, their values."""
    values = tuple(counters.values())
    packed: bytes | tuple[int, ...]
    try:
        packed = array("Q", values).tobytes()  # the decoder bounds them to 64 bits
    except OverflowError:  # a negative value: kept as sent
        packed = values
    return cast(Mapping[str, int], HwCounters(_NAMES.one(tuple(counters)), packed))
