"""Delivered against contracted: each deviation as an interval per node and GPU.

A deviation is a run of consecutive recorded minutes in which one GPU's measured value
breaks the contract with the same measured value; a gap in the readings or a change of
value starts a new interval. Kinds: ``usable_memory`` (memory total less what processes
that are not the renter's hold, below ``usable_memory_gib``), ``power_limit`` (the
enforced limit differs from ``power_limit_w``), ``pcie_gen`` and ``pcie_width`` (the
current link below the contracted one).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import polars as pl

from fleet.settings.contract_section import ContractSection

MINUTE_MS = 60_000
GIB = 1 << 30
HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class Deviation:
    """One GPU's stretch of delivered hardware that is not what the contract says."""

    node: str
    gpu: int
    kind: str
    start_ms: int
    end_ms: int
    measured: float
    contracted: float
    credit: Decimal | None  # money owed for it where the contract prices the kind

    @property
    def gpu_ms(self) -> int:
        """Its length in GPU-milliseconds (one GPU)."""
        return self.end_ms - self.start_ms


def _measures(contract: ContractSection) -> list[tuple[str, pl.Expr, float]]:
    """(kind, measured expression, contracted value) for each term the contract sets."""
    out: list[tuple[str, pl.Expr, float]] = []
    if contract.usable_memory_gib is not None:
        usable = (pl.col("mem_total_bytes") - pl.col("foreign_mem_bytes").fill_null(0)) / GIB
        out.append(("usable_memory", usable.round(2), contract.usable_memory_gib))
    if contract.power_limit_w is not None:
        out.append(
            ("power_limit", pl.col("power_limit_w").cast(pl.Float64), contract.power_limit_w)
        )
    if contract.pcie_gen is not None:
        out.append(("pcie_gen", pl.col("pcie_gen").cast(pl.Float64), float(contract.pcie_gen)))
    if contract.pcie_width is not None:
        out.append(
            ("pcie_width", pl.col("pcie_width").cast(pl.Float64), float(contract.pcie_width))
        )
    return out


def _provider_time(contract: ContractSection) -> pl.Expr:
    """The classes' ``provider``: a provider process alone on an active GPU."""
    activity = pl.coalesce(pl.col("sm_active_mean"), pl.col("util_mean"))
    active = activity.is_not_null() & (activity >= contract.working_floor_percent)
    return pl.col("provider_busy").fill_null(False) & active


def _breaks(kind: str, measured: pl.Expr, contracted: float) -> pl.Expr:
    if kind == "power_limit":
        return (measured - contracted).abs() >= 1.0  # NVML reports whole watts (mW / 1000)
    return measured < contracted


def find_deviations(
    delivery: pl.DataFrame, contract: ContractSection, start_ms: int, end_ms: int
) -> list[Deviation]:
    """Every deviation in ``delivery`` (``gpu_minutes`` rows with the ``delivery_minutes``
    columns joined) within the period."""
    frame = delivery.with_columns(t=pl.col("ts").dt.epoch("ms")).filter(
        (pl.col("t") >= start_ms - MINUTE_MS + 1) & (pl.col("t") < end_ms)
    )
    found: list[Deviation] = []
    for kind, measured, contracted in _measures(contract):
        rows = frame.with_columns(m=measured).filter(
            pl.col("m").is_not_null() & _breaks(kind, pl.col("m"), contracted)
        )
        if kind == "usable_memory":
            # A provider's check holds memory while it runs: that time is already the
            # provider's whole GPU (classes), not also a memory shortfall.
            rows = rows.filter(~_provider_time(contract))
        rows = rows.sort("node", "gpu", "t")
        found.extend(_intervals(rows, kind, contracted, contract, start_ms, end_ms))
    return sorted(found, key=lambda d: (d.node, d.gpu, d.start_ms, d.kind))


def _intervals(
    rows: pl.DataFrame,
    kind: str,
    contracted: float,
    contract: ContractSection,
    start_ms: int,
    end_ms: int,
) -> list[Deviation]:
    out: list[Deviation] = []
    current: list[Any] | None = None  # [node, gpu, start, end, measured]
    for node, gpu, t, m in rows.select("node", "gpu", "t", "m").iter_rows():
        lo, hi = max(t, start_ms), min(t + MINUTE_MS, end_ms)
        if current and current[:2] == [node, gpu] and current[3] == lo and current[4] == m:
            current[3] = hi
            continue
        if current:
            out.append(_deviation(current, kind, contracted, contract))
        current = [node, gpu, lo, hi, m]
    if current:
        out.append(_deviation(current, kind, contracted, contract))
    return out


def _deviation(
    run: list[Any], kind: str, contracted: float, contract: ContractSection
) -> Deviation:
    node, gpu, start, end, measured = run
    rate = contract.deviation_credits.get(kind)  # type: ignore[call-overload]
    credit = None if rate is None else rate * (end - start) / HOUR_MS
    return Deviation(node, gpu, kind, start, end, measured, contracted, credit)
