"""Idle GPU-hours per job, user and account: GPUs a job held while they did no work.

A GPU-minute is idle as the delivery ledger judges it (``judge_minutes``: below the
working floor for at least ``idle_min_minutes`` in a row, neither broken nor a
provider's). It is the job's when one of the job's intervals on that GPU covers the
minute's start; a minute shared by two jobs counts for each (rare: shared GPUs). Money
is the hours times the contract's ``gpu_hour_price`` (exact decimals).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import polars as pl

from fleet.settings.contract_section import ContractSection
from ledger.delivery.classes import judge_minutes

MINUTES_PER_HOUR = Decimal(60)


@dataclass(frozen=True)
class IdleRow:
    """Idle time of one job, user or account."""

    key: str
    idle_gpu_hours: Decimal
    held_gpu_hours: Decimal  # minutes the job held the GPU, idle or not
    cost: Decimal | None  # idle hours times the contract's price; None without a price


def job_minutes(
    minutes: pl.DataFrame, jobs: pl.DataFrame, contract: ContractSection
) -> pl.DataFrame:
    """Each judged GPU-minute a job held: ``job``, ``user``, ``account``, ``idle``."""
    judged = judge_minutes(minutes, contract)
    held = jobs.select("node", "gpu", "job", "user", "account", "start", "end")
    joined = judged.join(held, on=["node", "gpu"], how="inner")
    inside = (pl.col("ts") >= pl.col("start")) & (
        pl.col("end").is_null() | (pl.col("ts") < pl.col("end"))
    )
    return (
        joined.filter(inside)
        .unique(["node", "gpu", "ts", "job"], keep="first")
        .select("job", "user", "account", idle=pl.col("cls") == "idle")
    )


def idle_by(held: pl.DataFrame, key: str, price: Decimal | None) -> list[IdleRow]:
    """Idle and held GPU-hours per ``key`` (``job``, ``user`` or ``account``), most idle first."""
    totals = (
        held.group_by(key)
        .agg(idle=pl.col("idle").sum(), held=pl.len())
        .sort(["idle", key], descending=[True, False])
    )
    rows = []
    for name, idle, total in totals.iter_rows():
        hours = Decimal(int(idle)) / MINUTES_PER_HOUR
        rows.append(
            IdleRow(
                key=name or "",
                idle_gpu_hours=hours,
                held_gpu_hours=Decimal(int(total)) / MINUTES_PER_HOUR,
                cost=None if price is None else hours * price,
            )
        )
    return rows
