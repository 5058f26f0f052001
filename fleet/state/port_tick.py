"""Port rates and totals frozen at one tick, read by lazily built PortSnapshots."""

from __future__ import annotations

import numpy as np

_NAN = float("nan")


class PortFrozen:
    """Port rates and totals at one tick (never written after :meth:`PortColumns.freeze`)."""

    __slots__ = ("column", "rate", "total", "tracked")

    def __init__(
        self, column: dict[str, int], rate: np.ndarray, total: np.ndarray, tracked: np.ndarray
    ) -> None:
        self.column, self.rate, self.total, self.tracked = column, rate, total, tracked

    def readings(self, slots: list[int]) -> list[PortReadings]:
        """The rates and totals of ``slots`` as Python numbers (one array read per node)."""
        rates = np.where(self.tracked[slots], self.rate[slots], np.nan).tolist()
        totals = self.total[slots].tolist()
        return [PortReadings(self.column, r, t) for r, t in zip(rates, totals, strict=True)]


class PortReadings:
    """One port's rates and totals at one tick."""

    __slots__ = ("column", "rates", "totals")

    def __init__(self, column: dict[str, int], rates: list[float], totals: list[float]) -> None:
        self.column, self.rates, self.totals = column, rates, totals

    def rate(self, name: str, unit: int = 1) -> float | None:
        """Per-second rate of a counter (times ``unit``), None when unknown or not sent."""
        col = self.column.get(name)
        value = _NAN if col is None else self.rates[col]
        return None if value != value else value * unit

    def total(self, name: str) -> int:
        """Increments seen since the controller started watching."""
        col = self.column.get(name)
        return 0 if col is None else int(self.totals[col])
