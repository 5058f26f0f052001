"""February 2026 of a two-node, four-GPU fleet, written in the documented history layout.

The story, with the answer worked by hand in test_month.py:
- coverage: the whole month except 10 Feb (the monitor was down: 24 h blind);
- n1 and n2 up all month, except n2 broken ("nvlink 3 down") on 20 Feb 00:00-12:00;
- n1 gpu0 works (SM 50 %); n1 gpu1 sits at SM 0 %;
- n2 gpu0: the provider's check holds it the first 20 minutes of every hour (SM 90 %),
  then SM 0 % for 40 minutes; n2 gpu1 works (SM 30 %) with a 5-minute pause each hour;
- every GPU draws 300 W and its energy counter rises 18,000,000 mJ a minute, except
  that n1 gpu0's counter resets to 0 on 15 Feb 12:00 (a driver reload);
- deviations: n1 gpu1 power limit 650 W on 5 Feb 10:00-13:00; n2 gpu0 PCIe Gen 4 on
  3 Feb 00:00-02:00; n1 gpu0 has 5 GiB held by a provider process on 7 Feb
  06:00-07:30 (75 GiB usable of 80); otherwise 0.5 GiB (79.5 usable);
- probes: n1 gpu0 measured 400 TF32 TFLOPS, n1 gpu1 400 and 420 (median 410); n2 was
  never probed (datasheet H100 SXM 494).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from history.layout import (
    COVERAGE,
    DELIVERY_MINUTES,
    GPU_MINUTES,
    NODE_STATES,
    SCHEMAS,
    partition_dir,
    write_atomic,
)
from history.probes import PROBE_SCHEMA, PROBES

FEB = datetime(2026, 2, 1, tzinfo=UTC)
MAR = datetime(2026, 3, 1, tzinfo=UTC)
GAP_DAY = date(2026, 2, 10)
MIB = 1 << 20
GIB = 1 << 30


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    """A moment of February 2026."""
    return datetime(2026, 2, day, hour, minute, tzinfo=UTC)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _minutes() -> pl.DataFrame:
    """Every observed minute of every GPU (all days but the gap day)."""
    stamps = pl.datetime_range(FEB, MAR - timedelta(minutes=1), "1m", time_zone="UTC", eager=True)
    frame = pl.DataFrame({"ts": stamps.dt.cast_time_unit("ms")})
    frame = frame.filter(pl.col("ts").dt.date() != GAP_DAY)
    gpus = pl.DataFrame({"node": ["n1", "n1", "n2", "n2"], "gpu": [0, 1, 0, 1]})
    return gpus.join(frame, how="cross")


def gpu_minutes(rows: pl.DataFrame) -> pl.DataFrame:
    minute = pl.col("ts").dt.minute()
    key = pl.col("node") + pl.col("gpu").cast(pl.String)
    sm = (
        pl.when(key == "n10").then(50.0)
        .when(key == "n11").then(0.0)
        .when(key == "n20").then(pl.when(minute < 20).then(90.0).otherwise(0.0))
        .otherwise(pl.when(minute < 5).then(0.0).otherwise(30.0))
    )  # fmt: skip
    return rows.with_columns(
        uuid=pl.lit("GPU-") + key,
        serial=pl.lit(None, pl.String),  # not recorded by this month's history
        pci_bus_id=pl.lit(None, pl.String),
        util_mean=sm,
        util_max=sm.cast(pl.UInt8),
        sm_active_mean=sm,
        mem_used_mean_bytes=pl.lit(0),
        power_mean_w=pl.lit(300.0),
        power_max_w=pl.lit(300.0),
        temp_max_c=pl.lit(50),
        verdict=pl.lit("ok"),
        samples=pl.lit(60),
        util_samples=pl.lit(60),
    ).select(SCHEMAS[GPU_MINUTES].keys())


def delivery_minutes(rows: pl.DataFrame) -> pl.DataFrame:
    t = pl.col("ts")
    key = pl.col("node") + pl.col("gpu").cast(pl.String)
    minute_index = ((t.dt.epoch("ms") - _ms(FEB)) // 60_000).cast(pl.Int64)
    reset = _ms(at(15, 12))
    since_reset = ((t.dt.epoch("ms") - reset) // 60_000).cast(pl.Int64)
    counter = (
        pl.when((key == "n10") & (t.dt.epoch("ms") >= reset))
        .then(since_reset * 18_000_000)
        .otherwise(1_000_000_000 + minute_index * 18_000_000)
    )
    capped = (key == "n11") & (t >= at(5, 10)) & (t < at(5, 13))
    slow_link = (key == "n20") & (t >= at(3)) & (t < at(3, 2))
    held = (key == "n10") & (t >= at(7, 6)) & (t < at(7, 7, 30))
    return rows.with_columns(
        energy_mj=counter,
        power_limit_w=pl.when(capped).then(650.0).otherwise(700.0),
        pcie_gen=pl.when(slow_link).then(4).otherwise(5),
        pcie_gen_max=pl.lit(5),
        pcie_width=pl.lit(16),
        pcie_width_max=pl.lit(16),
        mem_total_bytes=pl.lit(80 * GIB),
        foreign_mem_bytes=pl.when(held).then(5 * GIB).otherwise(512 * MIB),
        provider_busy=(key == "n20") & (t.dt.minute() < 20),
        # Readings the contract's other terms judge, all as contracted.
        gpu_name=pl.lit("NVIDIA H100 80GB HBM3"),
        nvlink_up=pl.lit(18),
        driver=pl.lit("570.124.06"),
        ports_active=pl.lit(8),
    ).select(SCHEMAS[DELIVERY_MINUTES].keys())


def _by_day(data_dir: Path, table: str, frame: pl.DataFrame, column: str) -> None:
    frame = frame.cast(SCHEMAS[table])  # type: ignore[arg-type]
    for (day,), part in _days(frame, column):
        write_atomic(partition_dir(data_dir, table, day) / "month.parquet", part)


def _days(frame: pl.DataFrame, column: str) -> list[tuple[tuple[date], pl.DataFrame]]:
    days = frame.with_columns(_day=pl.col(column).dt.date())
    return [
        ((day,), part.drop("_day"))
        for (day,), part in sorted(days.partition_by("_day", as_dict=True).items())
    ]


def write_month(data_dir: Path) -> None:
    """The month above, in ``data_dir``."""
    rows = _minutes()
    _by_day(data_dir, GPU_MINUTES, gpu_minutes(rows), "ts")
    _by_day(data_dir, DELIVERY_MINUTES, delivery_minutes(rows), "ts")
    days = [d for d in (FEB + timedelta(days=i) for i in range(28)) if d.date() != GAP_DAY]
    coverage = pl.DataFrame({"start": days, "end": [d + timedelta(days=1) for d in days]})
    _by_day(data_dir, COVERAGE, coverage, "start")
    states = pl.DataFrame(
        {
            "node": ["n1", "n2", "n2", "n2"],
            "state": ["up", "up", "broken", "up"],
            "start": [FEB, FEB, at(20), at(20, 12)],
            "end": [MAR, at(20), at(20, 12), MAR],
            "reasons": [[], [], ["nvlink 3 down"], []],
        }
    )
    _by_day(data_dir, NODE_STATES, states, "start")
    write_probes(data_dir)


def write_probes(data_dir: Path) -> None:
    runs = [("n1", 0, 400.0, at(2)), ("n1", 1, 400.0, at(2)), ("n1", 1, 420.0, at(9))]
    rows: list[dict[str, Any]] = [
        {"ts": ended, "started": ended - timedelta(minutes=5), "node": node, "suite": "quick",
         "status": "ok", "model": "H100 SXM", "simulated": False, "kind": "measurement",
         "gpu": gpu, "probe": "gemm", "metric": "tf32", "value": value, "unit": "TFLOPS",
         "ok": True, "verdict": "pass", "gpu_verdict": "pass", "reasons": [], "detail": None,
         "code": None}
        for node, gpu, value, ended in runs
    ]  # fmt: skip
    for i, row in enumerate(rows):
        path = partition_dir(data_dir, PROBES, row["ts"].date()) / f"run{i}.parquet"
        write_atomic(path, pl.DataFrame([row], schema=PROBE_SCHEMA))
