"""The delivery ledger's own cost at 1,000 nodes x 8 GPUs, as a running process pays it.

Two parts, each printed in milliseconds and as a share of one core:

1. **The minute's rows.** When a minute closes the recorder writes the delivery rows of
   the minute's last snapshot (``history.delivery_rows``: ``delivery_minutes``, and
   ``port_minutes`` where history records it). The snapshots come from the real
   ``FleetRuntime`` fed canned agent lines (``bench/lib/fleet_states.py``), so their GPUs
   and ports are built on first read, as in the process: that building is counted.
2. **The month-to-date refresh.** The runtime makes the delivery families on a thread for
   /metrics (``gpufleet/ledger_figures.py``). Before: the whole month judged at every
   SLA refresh (30 s), a cost that grows with the history (measured up to
   ``--whole-up-to`` hours; beyond, extrapolated from the cost per hour, and said so).
   After, in the same run: the month kept between refreshes (``ledger.delivery.month``)
   and made again every ``DELIVERY_REFRESH_S`` (300 s): the first build (once per
   process), a refresh 5 minutes later in the middle of an hour (the open hour judged
   again), and one just after an hour closed (that hour judged too).

History is written in the documented layout, one file per table and hour, a healthy
busy fleet. The budget is the issue's: 1 % of a core.

    .venv/bin/python bench/bench_delivery.py [--nodes 1000] [--hours 1 24 72] [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.lib.fleet_states import state_ticks
from fleet.settings.contract_section import ContractSection
from gpufleet.ledger_figures import DELIVERY_REFRESH_S
from history import delivery_rows as rows_module
from history.layout import (
    COVERAGE,
    DELIVERY_MINUTES,
    GPU_MINUTES,
    NODE_STATES,
    SCHEMAS,
    partition_dir,
    write_atomic,
)
from history.reader import HistoryReader
from ledger.delivery.ledger import build_ledger, period_of
from ledger.delivery.month import DeliveryMonth
from ledger.delivery.section import EnergySection

MINUTE_S = 60.0
REFRESH_S = 30.0  # gpufleet.runtime.SLA_REFRESH_S
HOUR_MS = 3_600_000
BUDGET = 0.01  # of one core
START = datetime(2026, 3, 1, tzinfo=UTC)
CONTRACT = ContractSection(
    gpu_model="H100", gpus_per_node=8, usable_memory_gib=79, power_limit_w=700, pcie_gen=5,
    pcie_width=16, nvlinks_up=18, network_ports=8, network_rate_gbps=400,
    driver_min="550", driver_max="575",
)  # fmt: skip


def cpu_ms(work: object, repeat: int) -> float:
    """The least process CPU time of ``repeat`` calls of ``work``, ms."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best * 1000


def minute_rows(nodes: int, repeat: int) -> float:
    """CPU ms of one minute's delivery rows, on snapshots whose GPUs are not built yet."""
    ticks = state_ticks(nodes, ticks=repeat)
    port_rows = getattr(rows_module, "port_rows", None)
    best = float("inf")
    for snapshot in ticks:  # each snapshot's lazy GPUs and ports built by this read
        start = time.process_time()
        rows_module.delivery_rows(snapshot.nodes, 0)
        if port_rows is not None:
            port_rows(snapshot.nodes, 0)
        best = min(best, time.process_time() - start)
    return best * 1000


def write_hours(data_dir: Path, nodes: int, hours: int, first: int = 0, minutes: int = 60) -> None:
    """Hours ``first`` to ``hours`` of a healthy, busy fleet in the history layout, one
    file per table and hour; the last hour holds its first ``minutes``."""
    gpus = nodes * 8
    names = [f"node-{g // 8:04d}" for g in range(gpus)]
    rng = np.random.default_rng(7 + first)
    for hour in range(first, hours):
        begin = START + timedelta(hours=hour)
        count = minutes if hour == hours - 1 else 60
        n = count * gpus
        minute = np.repeat(np.arange(count, dtype=np.int64), gpus)
        base = pl.DataFrame(
            {
                "ts": int(begin.timestamp() * 1000) + minute * 60_000,
                "node": names * count,
                "gpu": np.tile(np.arange(gpus) % 8, count),
            }
        ).with_columns(pl.col("ts").cast(pl.Datetime("ms", "UTC")))
        sm = rng.uniform(0, 100, n)
        gpu = base.with_columns(
            uuid=pl.lit("GPU-x"), serial=pl.lit(None, pl.String),
            pci_bus_id=pl.lit(None, pl.String), util_mean=sm, util_max=pl.lit(90),
            sm_active_mean=sm, mem_used_mean_bytes=pl.lit(1 << 30), power_mean_w=pl.lit(500.0),
            power_max_w=pl.lit(600.0), temp_max_c=pl.lit(60), verdict=pl.lit("ok"),
            samples=pl.lit(60), util_samples=pl.lit(60),
        )  # fmt: skip
        minute_of_month = (hour * 60 + minute).astype(np.int64)
        extra = base.with_columns(
            energy_mj=pl.Series(minute_of_month * 30_000_000), power_limit_w=pl.lit(700.0),
            pcie_gen=pl.lit(5), pcie_gen_max=pl.lit(5), pcie_width=pl.lit(16),
            pcie_width_max=pl.lit(16), mem_total_bytes=pl.lit(80 << 30),
            foreign_mem_bytes=pl.lit(0), provider_busy=pl.lit(False),
            gpu_name=pl.lit("NVIDIA H100 80GB HBM3"), nvlink_up=pl.lit(18),
            driver=pl.lit("570.124.06"), ports_active=pl.lit(8),
        )  # fmt: skip
        for table, frame in ((GPU_MINUTES, gpu), (DELIVERY_MINUTES, extra)):
            frame = frame.select(list(SCHEMAS[table])).cast(SCHEMAS[table])  # type: ignore[arg-type]
            folder = partition_dir(data_dir, table, begin.date())
            write_atomic(folder / f"{begin.hour:02d}-bench.parquet", frame)
    end = START + timedelta(hours=hours - 1, minutes=minutes)
    states = pl.DataFrame(
        {"node": sorted(set(names)), "state": "up", "start": START, "end": end, "reasons": None}
    ).cast(SCHEMAS[NODE_STATES])  # type: ignore[arg-type]
    write_atomic(partition_dir(data_dir, NODE_STATES, START.date()) / "bench.parquet", states)
    coverage = pl.DataFrame({"start": [START], "end": [end]}).cast(SCHEMAS[COVERAGE])  # type: ignore[arg-type]
    write_atomic(partition_dir(data_dir, COVERAGE, START.date()) / "bench.parquet", coverage)


def whole(data_dir: Path, now_ms: int, repeat: int) -> float:
    """CPU ms of the month judged whole, as every refresh did before."""
    period = period_of(int(START.timestamp() * 1000), now_ms)
    energy = EnergySection(grid_intensity_g_per_kwh=400)
    return cpu_ms(
        lambda: build_ledger(HistoryReader(data_dir), period, CONTRACT, energy, now_ms), repeat
    )


def kept(data_dir: Path, nodes: int, hours: int) -> tuple[float, float, float]:
    """CPU ms of the kept month: its first build at ``hours`` h 30 min, a refresh 5
    minutes later, and one 5 minutes after the next hour closed."""
    month = DeliveryMonth()
    energy = EnergySection(grid_intensity_g_per_kwh=400)
    start_ms = int(START.timestamp() * 1000)

    def build(minutes_past: int) -> float:
        now_ms = start_ms + hours * HOUR_MS + minutes_past * 60_000
        period = period_of(start_ms, now_ms)
        return cpu_ms(
            lambda: month.build(HistoryReader(data_dir), period, CONTRACT, energy, now_ms), 1
        )

    write_hours(data_dir, nodes, hours + 1, hours, 30)
    first = build(30)
    write_hours(data_dir, nodes, hours + 1, hours, 35)
    middle = build(35)
    write_hours(data_dir, nodes, hours + 1, hours, 60)
    write_hours(data_dir, nodes, hours + 2, hours + 1, 5)
    closed = build(65)
    return first, middle, closed


def share(ms: float, every_s: float) -> str:
    return f"{ms / 1000 / every_s:.2%} of a core"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--hours", type=int, nargs="+", default=[1, 24, 72])
    parser.add_argument("--whole-up-to", type=int, default=24, help="hours; beyond, extrapolated")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    gpus = args.nodes * 8
    rows = minute_rows(args.nodes, args.repeat)
    print(f"minute's rows, {args.nodes} nodes x 8 GPUs, delivery_minutes + port_minutes: "
          f"{rows:.1f} ms CPU a minute = {share(rows, MINUTE_S)} "
          f"(budget {BUDGET:.0%})")  # fmt: skip
    per_hour: float | None = None
    for hours in args.hours:
        with tempfile.TemporaryDirectory(prefix="bench-delivery-") as scratch:
            data_dir = Path(scratch)
            write_hours(data_dir, args.nodes, hours)
            if hours <= args.whole_up_to:
                ms = whole(data_dir, int(START.timestamp() * 1000) + hours * HOUR_MS, args.repeat)
                per_hour, how = ms / hours, "measured"
            else:
                assert per_hour is not None, "measure a smaller history whole first"
                ms, how = per_hour * hours, f"extrapolated at {per_hour:.0f} ms an hour"
            first, middle, closed = kept(data_dir, args.nodes, hours)
        print(f"{hours} h of history ({hours * 60 * gpus:,} GPU-minutes):")
        print(f"  before, whole month every {REFRESH_S:.0f} s: {ms:.0f} ms CPU ({how}) = "
              f"{share(ms, REFRESH_S)}")  # fmt: skip
        print(f"  after, kept month: first build {first:.0f} ms (once); a refresh in the "
              f"hour's middle {middle:.0f} ms = {share(middle, DELIVERY_REFRESH_S)} at one "
              f"per {DELIVERY_REFRESH_S:.0f} s ({share(middle, REFRESH_S)} at one per "
              f"{REFRESH_S:.0f} s); just after an hour closed {closed:.0f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
