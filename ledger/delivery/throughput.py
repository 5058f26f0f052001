"""Each GPU's TF32 GEMM throughput: measured by the probes where they ran, else the
datasheet peak, marked so (renters compare clouds by measured figures)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

import polars as pl

from probes.expected import expected_for, model_of


@dataclass(frozen=True, slots=True)
class Throughput:
    """TF32 TFLOPS of one GPU and where the figure comes from (measured | datasheet)."""

    tflops: Decimal
    source: str


def measured_tf32(probes: pl.DataFrame, until_ms: int) -> dict[tuple[str, int], Decimal]:
    """The median TF32 GEMM figure of each (node, GPU) over runs ended before ``until_ms``."""
    if probes.is_empty():
        return {}
    until = datetime.fromtimestamp(until_ms / 1000, UTC)
    rows = probes.filter(
        (pl.col("kind") == "measurement")
        & (pl.col("probe") == "gemm")
        & (pl.col("metric") == "tf32")
        & (pl.col("unit") == "TFLOPS")
        & (pl.col("ts") < until)
        & pl.col("value").is_finite()
        & (pl.col("value") > 0)
    )
    medians = rows.group_by("node", "gpu").agg(pl.col("value").median()).sort("node", "gpu")
    return {
        (node, gpu): Decimal(str(round(value, 1)))
        for node, gpu, value in medians.iter_rows()
        if gpu is not None
    }


def datasheet_tf32(gpu_model: str | None) -> Decimal | None:
    """The datasheet TF32 peak (dense) of the contracted model, None when unknown."""
    figure = expected_for(model_of(gpu_model), "gemm", "tf32")
    return None if figure is None else Decimal(str(figure.peak))


def gpu_throughput(
    measured: dict[tuple[str, int], Decimal], node: str, gpu: int, datasheet: Decimal | None
) -> Throughput | None:
    """What one GPU delivers per hour of work, None when neither figure exists."""
    found = measured.get((node, gpu))
    if found is not None:
        return Throughput(found, "measured")
    return None if datasheet is None else Throughput(datasheet, "datasheet")
