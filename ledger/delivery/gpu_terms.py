"""The contract's terms for each GPU, judged per recorded GPU-minute.

``usable_memory`` (memory total less what processes that are not the renter's hold,
below ``usable_memory_gib``), ``power_limit`` (the enforced limit differs from
``power_limit_w``), ``pcie_gen`` and ``pcie_width`` (the current link below the
contracted one), ``nvlink_up`` (fewer NVLink links up than ``nvlinks_up``) and
``gpu_model`` (NVML's name does not contain ``gpu_model``, case aside).
"""

from __future__ import annotations

import polars as pl

from fleet.settings.contract_section import ContractSection
from ledger.delivery.breach import Breach, breach

GIB = 1 << 30


def _numeric_terms(contract: ContractSection) -> list[tuple[str, pl.Expr, float]]:
    """(kind, measured expression, contracted value) for each numeric term the contract sets."""
    out: list[tuple[str, pl.Expr, float]] = []
    if contract.usable_memory_gib is not None:
        usable = (pl.col("mem_total_bytes") - pl.col("foreign_mem_bytes").fill_null(0)) / GIB
        out.append(("usable_memory", usable.round(2), contract.usable_memory_gib))
    if contract.power_limit_w is not None:
        out.append(
            ("power_limit", pl.col("power_limit_w").cast(pl.Float64), contract.power_limit_w)
        )
    for kind, column, value in (
        ("pcie_gen", "pcie_gen", contract.pcie_gen),
        ("pcie_width", "pcie_width", contract.pcie_width),
        ("nvlink_up", "nvlink_up", contract.nvlinks_up),
    ):
        if value is not None:
            out.append((kind, pl.col(column).cast(pl.Float64), float(value)))
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


def gpu_breaches(frame: pl.DataFrame, contract: ContractSection) -> list[Breach]:
    """Each GPU term's broken minutes in ``frame`` (``gpu_minutes`` with the
    ``delivery_minutes`` columns joined, and ``t`` in ms)."""
    out = []
    for kind, measured, contracted in _numeric_terms(contract):
        rows = frame.with_columns(m=measured).filter(
            pl.col("m").is_not_null() & _breaks(kind, pl.col("m"), contracted)
        )
        if kind == "usable_memory":
            # A provider's check holds memory while it runs: that time is already the
            # provider's whole GPU (classes), not also a memory shortfall.
            rows = rows.filter(~_provider_time(contract))
        out.append(breach(kind, contracted, rows))
    if contract.gpu_model is not None:
        wanted = contract.gpu_model.lower()
        rows = frame.with_columns(m=pl.col("gpu_name")).filter(
            pl.col("m").is_not_null()
            & ~pl.col("m").str.to_lowercase().str.contains(wanted, literal=True)
        )
        out.append(breach("gpu_model", contract.gpu_model, rows))
    return out
