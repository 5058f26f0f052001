"""One kept copy of each distinct value that many GPUs, ports or nodes hold alike.

Node data decodes into fresh objects: a tuple of rates, a facts key, a model name per GPU
or port. Where the state keeps such a value for a session and most of the fleet sends
the same one (healthy links, healthy ports, one GPU model), a copy per holder is most of
what the value costs. A table hands out the first copy it saw instead. It is bounded,
as node data may be anything: when full it starts again (the copies handed out stay
valid; only later equal values get a new first copy).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

_V = TypeVar("_V", bound=Hashable)


class KeptCopies(Generic[_V]):
    """Equal values in, the first one kept out (at most ``most`` kept at a time)."""

    __slots__ = ("_kept", "most")

    def __init__(self, most: int) -> None:
        self.most = most
        self._kept: dict[_V, _V] = {}

    def one(self, value: _V) -> _V:
        """``value``, or an equal one kept before."""
        kept = self._kept.get(value)
        if kept is None:
            if len(self._kept) >= self.most:
                self._kept.clear()
            self._kept[value] = kept = value
        return kept

    def __len__(self) -> int:
        return len(self._kept)
