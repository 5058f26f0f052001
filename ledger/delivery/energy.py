"""GPU energy from NVML's total energy counter; facility energy and CO2.

Each recorded GPU-minute's energy is the counter's rise since the minute before. Where
there is no counter, the previous minute is missing, or the counter went down (a driver
reload resets it), the minute's mean power x 60 s is used instead, and the minutes
integrated that way are counted so the report can say so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, localcontext

import polars as pl

from ledger.delivery.class_energy import ClassEnergy
from ledger.delivery.classes import CLASSES
from ledger.delivery.grid import HOUR_MS, GridIntensity

MINUTE_MS = 60_000
MJ_PER_KWH = Decimal(3_600_000_000)  # millijoules in a kilowatt-hour


@dataclass(frozen=True)
class EnergyUse:
    """Energy of the period, in millijoules, by GPU, node and hour, and how it was found."""

    gpu_mj: dict[tuple[str, int], int]
    hour_mj: dict[int, int]
    counter_minutes: int
    power_minutes: int  # integrated from power: no counter, a reset or a gap
    unknown_minutes: int  # neither counter nor power
    node_mj: dict[str, int] = field(default_factory=dict)

    @property
    def fleet_mj(self) -> int:
        """All GPUs' energy, millijoules."""
        return sum(self.gpu_mj.values())


def minute_energy(minutes: pl.DataFrame) -> pl.DataFrame:
    """``minutes`` (``gpu_minutes`` joined with ``delivery_minutes``) with ``mj`` and
    ``source`` (counter | power | none) per row."""
    t = pl.col("ts").dt.epoch("ms")
    frame = minutes.sort("node", "gpu", "ts").with_columns(
        delta=(
            pl.col("energy_mj").cast(pl.Int64) - pl.col("energy_mj").cast(pl.Int64).shift(1)
        ).over("node", "gpu"),
        step=(t - t.shift(1)).over("node", "gpu"),
    )
    counted = (pl.col("step") == MINUTE_MS) & (pl.col("delta") >= 0)
    power_mj = (pl.col("power_mean_w").cast(pl.Float64) * MINUTE_MS).round(0).cast(pl.Int64)
    return frame.with_columns(
        mj=pl.when(counted).then(pl.col("delta")).otherwise(power_mj).fill_null(0),
        source=pl.when(counted).then(pl.lit("counter"))
        .when(pl.col("power_mean_w").is_not_null()).then(pl.lit("power"))
        .otherwise(pl.lit("none")),
    )  # fmt: skip


def period_energy(minutes: pl.DataFrame, start_ms: int, end_ms: int) -> pl.DataFrame:
    """:func:`minute_energy` of the GPU-minutes starting in ``[start_ms, end_ms)``, with
    ``t`` (the minute's start, ms)."""
    frame = minute_energy(minutes).with_columns(t=pl.col("ts").dt.epoch("ms"))
    return frame.filter((pl.col("t") >= start_ms) & (pl.col("t") < end_ms))


def energy_use(frame: pl.DataFrame) -> EnergyUse:
    """The energy of ``frame`` (:func:`period_energy`), summed without a Python loop (a
    month of a large fleet is hundreds of millions of GPU-minutes)."""
    mj = pl.col("mj").cast(pl.Int64).sum()
    gpu_mj = frame.group_by("node", "gpu").agg(mj).sort("node", "gpu")
    node_mj = frame.group_by("node").agg(mj).sort("node")
    hour_mj = frame.group_by(hour=pl.col("t") - pl.col("t") % HOUR_MS).agg(mj).sort("hour")
    sources = dict(frame.group_by("source").len().iter_rows())
    return EnergyUse(
        {(node, gpu): total for node, gpu, total in gpu_mj.iter_rows()},
        dict(hour_mj.iter_rows()), sources.get("counter", 0), sources.get("power", 0),
        sources.get("none", 0), dict(node_mj.iter_rows()),
    )  # fmt: skip


def kwh(mj: int) -> Decimal:
    """Millijoules as kWh (exact)."""
    return Decimal(mj) / MJ_PER_KWH


@dataclass(frozen=True)
class Carbon:
    """Grams of CO2eq of the facility's energy, in all and by class, and hours the
    intensity source lacked."""

    grams: Decimal
    missing_hours: int
    source: str
    class_grams: dict[str, Decimal] = field(default_factory=dict)


def carbon(use: EnergyUse, pue: Decimal, intensity: GridIntensity, split: ClassEnergy) -> Carbon:
    """Facility energy (GPU energy x PUE) of each hour x that hour's grid intensity, by
    class; the total is the classes' sum."""
    numerators: dict[str, Decimal] = defaultdict(Decimal)  # mJ x PUE x g/kWh: exact
    for (cls, hour), mj in sorted(split.hour_mj.items()):
        numerators[cls] += mj * pue * intensity.at(hour)[0]
    missing = sum(not intensity.at(hour)[1] for hour in use.hour_mj)
    with localcontext() as exact:
        exact.prec = 60  # one division per class, so the classes sum to the total
        class_grams = {c: numerators[c] / MJ_PER_KWH for c in CLASSES}
        grams = sum(class_grams.values(), Decimal(0))
    return Carbon(grams, missing, intensity.source, class_grams)
