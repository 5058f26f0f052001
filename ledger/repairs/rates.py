"""Failure rates per component class, with exact confidence limits, and MTBF per node.

Exposure is the monitored time of each node (``up``, ``broken`` and ``unreachable``
intervals; ``unmonitored`` time is no evidence either way and is left out). A failure is
an outage (a repair record) detected in the period, counted in the one class its
evidence names. GPU-days are node-days times the contract's GPUs per node.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from history.states import StateInterval
from ledger.repairs.model import FAILURE_CLASSES, FailureClass, RepairRecord
from ledger.repairs.poisson import garwood

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
OBSERVED = frozenset(("up", "broken", "unreachable"))


@dataclass(frozen=True, slots=True)
class Rate:
    """Failures of one class per node-day and per GPU-day, with 95 % Garwood limits."""

    failure_class: FailureClass | str
    failures: int
    per_node_day: float
    node_day_limits: tuple[float, float]
    per_gpu_day: float
    gpu_day_limits: tuple[float, float]


@dataclass(frozen=True, slots=True)
class Exposure:
    """How much was observed: the denominator of every rate."""

    start_ms: int
    end_ms: int
    node_ms: dict[str, int]
    gpus_per_node: int

    @property
    def node_days(self) -> float:
        return sum(self.node_ms.values()) / DAY_MS

    @property
    def gpu_days(self) -> float:
        return self.node_days * self.gpus_per_node


def exposure(
    intervals: Sequence[StateInterval], start_ms: int, end_ms: int, gpus_per_node: int
) -> Exposure:
    """Monitored milliseconds per node inside ``[start_ms, end_ms)``."""
    seen: dict[str, int] = defaultdict(int)
    for i in intervals:
        if i.state not in OBSERVED:
            continue
        lo, hi = (
            max(i.start_ms, start_ms),
            min(i.end_ms if i.end_ms is not None else end_ms, end_ms),
        )
        if hi > lo:
            seen[i.node] += hi - lo
    return Exposure(start_ms, end_ms, dict(sorted(seen.items())), gpus_per_node)


def rates(records: Sequence[RepairRecord], seen: Exposure, confidence: float = 0.95) -> list[Rate]:
    """One rate per class, then ``all`` (every outage)."""
    counts = Counter(r.failure_class for r in records)
    out = [_rate(c, counts[c], seen, confidence) for c in FAILURE_CLASSES]
    out.append(_rate("all", len(records), seen, confidence))
    return out


def _rate(name: FailureClass | str, k: int, seen: Exposure, confidence: float) -> Rate:
    lo, hi = garwood(k, confidence)
    nd, gd = seen.node_days, seen.gpu_days
    if nd <= 0:
        return Rate(name, k, 0.0, (0.0, 0.0), 0.0, (0.0, 0.0))
    return Rate(name, k, k / nd, (lo / nd, hi / nd), k / gd, (lo / gd, hi / gd))


def mtbf_hours(records: Sequence[RepairRecord], seen: Exposure) -> dict[str, float | None]:
    """Observed hours per failure, per node; None where the node never failed."""
    failures = Counter(r.node for r in records)
    return {
        node: (ms / HOUR_MS / failures[node]) if failures[node] else None
        for node, ms in seen.node_ms.items()
    }


def per_node_hour(records: Sequence[RepairRecord], seen: Exposure) -> float:
    """The fleet's failure rate per node-hour: the forecast's one parameter."""
    hours = sum(seen.node_ms.values()) / HOUR_MS
    return len(records) / hours if hours > 0 else 0.0
