"""The month kept between refreshes equals the month judged from scratch, exactly.

Two nodes of two GPUs from 1 March 2026 00:00, recorded as the recorder writes (one file
per table and hour, the open hour's rewritten as it fills), refreshed as the running
fleet refreshes. What crosses an hour's or a day's edge is planted on one:
- n1 gpu0's energy counter resets at 1 Mar 22:17 (a driver reload);
- n1 gpu1's power limit is 650 W from 1 Mar 22:00 to 2 Mar 02:00 (across midnight);
- n2 gpu0 is below the floor from 1 Mar 23:55 to 2 Mar 00:07 (12 minutes: idle, though
  each day holds less than the idle rule's 10) and from 2 Mar 04:57 to 05:03 (6 minutes:
  working);
- n2 is broken ("nvlink 3 down") from 2 Mar 03:10:30 to 04:05 (a cut minute), and the
  monitor is blind from 1 Mar 13:00 to 13:20:30;
- n2's port mlx5_1 runs at 200 of 400 Gb/s from 1 Mar 23:30 to 2 Mar 00:30.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl

from fleet.settings.contract_section import ContractSection
from history.layout import (
    COVERAGE,
    DELIVERY_MINUTES,
    GPU_MINUTES,
    NODE_STATES,
    PORT_MINUTES,
    SCHEMAS,
    partition_dir,
    write_atomic,
)
from history.reader import HistoryReader
from ledger.delivery.ledger import DeliveryLedger, build_ledger, period_of
from ledger.delivery.month import DeliveryMonth
from ledger.delivery.section import EnergySection
from ledger.delivery.summary import delivery_json

START = datetime(2026, 3, 1, tzinfo=UTC)
CONTRACT = ContractSection(
    gpu_model="H100", gpus_per_node=2, power_limit_w=700, network_ports=2,
    network_rate_gbps=400,
    deviation_credits={"power_limit": Decimal("1.00"), "network_rate": Decimal("0.50")},
)  # fmt: skip
ENERGY = EnergySection(grid_intensity_g_per_kwh=400, pue=1.2)


def at(day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, second, tzinfo=UTC)


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def minutes_until(now: datetime) -> pl.DataFrame:
    """Every GPU-minute that closed before ``now``."""
    last = now.replace(second=0, microsecond=0) - timedelta(minutes=1)
    stamps = pl.datetime_range(START, last, "1m", time_zone="UTC", eager=True)
    frame = pl.DataFrame({"ts": stamps.dt.cast_time_unit("ms")})
    gpus = pl.DataFrame({"node": ["n1", "n1", "n2", "n2"], "gpu": [0, 1, 0, 1]})
    return gpus.join(frame, how="cross")


def gpu_rows(rows: pl.DataFrame) -> pl.DataFrame:
    t, key = pl.col("ts"), pl.col("node") + pl.col("gpu").cast(pl.String)
    paused = (key == "n20") & (
        ((t >= at(1, 23, 55)) & (t < at(2, 0, 7))) | ((t >= at(2, 4, 57)) & (t < at(2, 5, 3)))
    )
    sm = pl.when(paused).then(0.0).otherwise(40.0)
    return rows.with_columns(
        uuid=pl.lit("GPU-") + key, serial=pl.lit(None, pl.String),
        pci_bus_id=pl.lit(None, pl.String), util_mean=sm, util_max=sm.cast(pl.UInt8),
        sm_active_mean=sm, mem_used_mean_bytes=pl.lit(0), power_mean_w=pl.lit(300.0),
        power_max_w=pl.lit(300.0), temp_max_c=pl.lit(50), verdict=pl.lit("ok"),
        samples=pl.lit(60), util_samples=pl.lit(60),
    ).select(SCHEMAS[GPU_MINUTES].keys())  # fmt: skip


def delivery_rows(rows: pl.DataFrame) -> pl.DataFrame:
    t, key = pl.col("ts"), pl.col("node") + pl.col("gpu").cast(pl.String)
    index = (t.dt.epoch("ms") - ms(START)) // 60_000
    reset = ms(at(1, 22, 17))
    counter = (
        pl.when((key == "n10") & (t.dt.epoch("ms") >= reset))
        .then((t.dt.epoch("ms") - reset) // 60_000 * 18_000_000)
        .otherwise(5_000_000_000 + index * 18_000_000)
    )
    capped = (key == "n11") & (t >= at(1, 22)) & (t < at(2, 2))
    return rows.with_columns(
        energy_mj=counter, power_limit_w=pl.when(capped).then(650.0).otherwise(700.0),
        pcie_gen=pl.lit(5), pcie_gen_max=pl.lit(5), pcie_width=pl.lit(16),
        pcie_width_max=pl.lit(16), mem_total_bytes=pl.lit(80 << 30),
        foreign_mem_bytes=pl.lit(0), provider_busy=pl.lit(False),
        gpu_name=pl.lit("NVIDIA H100 80GB HBM3"), nvlink_up=pl.lit(18),
        driver=pl.lit("570.124.06"), ports_active=pl.lit(2),
    ).select(SCHEMAS[DELIVERY_MINUTES].keys())  # fmt: skip


def port_rows(rows: pl.DataFrame) -> pl.DataFrame:
    nodes = rows.filter(pl.col("gpu") == 0).select("ts", "node")
    ports = pl.DataFrame({"port": ["mlx5_0/1", "mlx5_1/1"]})
    frame = nodes.join(ports, how="cross")
    t = pl.col("ts")
    slow = (pl.col("node") == "n2") & (pl.col("port") == "mlx5_1/1")
    slow = slow & (t >= at(1, 23, 30)) & (t < at(2, 0, 30))
    return frame.with_columns(
        kind=pl.lit("ib"), state=pl.lit("ACTIVE"),
        rate_gbps=pl.when(slow).then(200.0).otherwise(400.0),
    ).select(SCHEMAS[PORT_MINUTES].keys())  # fmt: skip


def record(data_dir: Path, now: datetime) -> None:
    """History as the recorder leaves it at ``now``: one file per table and hour (a file
    rewritten only when its hour gained rows), the coverage and the node states."""
    rows = minutes_until(now)
    for table, frame in (
        (GPU_MINUTES, gpu_rows(rows)),
        (DELIVERY_MINUTES, delivery_rows(rows)),
        (PORT_MINUTES, port_rows(rows)),
    ):
        frame = frame.cast(SCHEMAS[table])  # type: ignore[arg-type]
        hours = frame.with_columns(hour=pl.col("ts").dt.truncate("1h"))
        for (hour,), part in hours.partition_by("hour", as_dict=True).items():
            path = partition_dir(data_dir, table, hour.date()) / f"{hour.hour:02d}-test.parquet"
            part = part.drop("hour")
            if not path.exists() or pl.read_parquet(path).height != part.height:
                write_atomic(path, part)
    blind = (at(1, 13), at(1, 13, 20, 30))
    coverage = pl.DataFrame({"start": [START, blind[1]], "end": [blind[0], now]})
    write_atomic(partition_dir(data_dir, COVERAGE, START.date()) / "c.parquet",
                 coverage.cast(SCHEMAS[COVERAGE]))  # type: ignore[arg-type]  # fmt: skip
    states = pl.DataFrame({
        "node": ["n1", "n2", "n2", "n2"], "state": ["up", "up", "broken", "up"],
        "start": [START, START, at(2, 3, 10, 30), at(2, 4, 5)],
        "end": [None, at(2, 3, 10, 30), at(2, 4, 5), None],
        "reasons": [[], [], ["nvlink 3 down"], []],
    })  # fmt: skip
    states = states.filter(pl.col("start") < now).with_columns(
        end=pl.when(pl.col("end") < now).then(pl.col("end"))
    )
    write_atomic(partition_dir(data_dir, NODE_STATES, START.date()) / "s.parquet",
                 states.cast(SCHEMAS[NODE_STATES]))  # type: ignore[arg-type]  # fmt: skip


def both(month: DeliveryMonth, data_dir: Path, now: datetime) -> tuple[DeliveryLedger, ...]:
    period = period_of(ms(START), ms(now))
    kept = month.build(HistoryReader(data_dir), period, CONTRACT, ENERGY, ms(now))
    full = build_ledger(HistoryReader(data_dir), period, CONTRACT, ENERGY, ms(now))
    return kept, full


def test_refreshes_of_a_growing_history_equal_the_whole_judgement(tmp_path: Path) -> None:
    month = DeliveryMonth()
    moments = [at(1, 22, 40, 10), at(2, 0, 3, 5), at(2, 0, 12, 40), at(2, 5, 30, 30)]
    for now in moments:
        record(tmp_path, now)
        kept, full = both(month, tmp_path, now)
        assert kept == full, now
    # The planted stories are there, so the comparison compared something.
    kinds = {(d.node, d.gpu, d.port, d.kind, d.start_ms, d.end_ms) for d in kept.deviations}
    assert ("n1", 1, None, "power_limit", ms(at(1, 22)), ms(at(2, 2))) in kinds
    assert ("n2", None, "mlx5_1/1", "network_rate", ms(at(1, 23, 30)), ms(at(2, 0, 30))) in kinds
    n2 = next(n for n in kept.nodes if n.node == "n2")
    assert n2.gpu_ms[0]["idle"] == 12 * 60_000
    assert kept.energy.power_minutes >= 1 and kept.carbon is not None


def test_closed_hours_are_judged_once_and_again_when_their_file_changes(tmp_path: Path) -> None:
    month = DeliveryMonth()
    now = at(2, 5, 30, 30)
    record(tmp_path, now)
    both(month, tmp_path, now)
    assert month.judged_hours == 30  # 1 March's 24 hours, 2 March's 5 and the open one
    kept, full = both(month, tmp_path, now)
    assert month.judged_hours == 31 and kept == full  # the open hour alone
    before = next(n for n in kept.nodes if n.node == "n1").gpu_ms[1]["broken"]
    # An hour's file rewritten (a GPU's minutes lost): its closed day (which keeps only
    # its sum) is judged again.
    path = partition_dir(tmp_path, GPU_MINUTES, at(1).date()) / "08-test.parquet"
    frame = pl.read_parquet(path)
    write_atomic(path, frame.filter(~((pl.col("node") == "n1") & (pl.col("gpu") == 1))))
    kept, full = both(month, tmp_path, now)
    assert month.judged_hours == 31 + 24 + 1 and kept == full
    n1 = next(n for n in kept.nodes if n.node == "n1")
    assert n1.gpu_ms[1]["broken"] - before == 60 * 60_000  # the hour it did not report


def test_a_stopped_history_reads_the_same_every_refresh(tmp_path: Path) -> None:
    month = DeliveryMonth()
    now = at(2, 2, 0, 0)
    record(tmp_path, now)
    ledgers = [*both(month, tmp_path, now), *both(month, tmp_path, now)]
    assert len({str(delivery_json(led)) for led in ledgers}) == 1


def test_the_running_fleets_delivery_families_come_from_the_kept_month_every_5_minutes(
    tmp_path: Path,
) -> None:
    from exporter.delivery_families import render_delivery
    from gpufleet.ledger_figures import DELIVERY_REFRESH_S, DeliveryFigures, compute_figures

    figures = DeliveryFigures()
    now = at(2, 1, 0, 10)
    record(tmp_path, now)
    first = compute_figures(tmp_path, CONTRACT, ENERGY, now.timestamp(), figures)
    assert render_delivery(both(DeliveryMonth(), tmp_path, now)[1]) in first.families
    assert figures.month is not None
    judged = figures.month.judged_hours
    later = now + timedelta(seconds=DELIVERY_REFRESH_S - 1)
    record(tmp_path, later)
    again = compute_figures(tmp_path, CONTRACT, ENERGY, later.timestamp(), figures)
    assert again.families == first.families and figures.month.judged_hours == judged
    due = now + timedelta(seconds=DELIVERY_REFRESH_S)
    record(tmp_path, due)
    fresh = compute_figures(tmp_path, CONTRACT, ENERGY, due.timestamp(), figures)
    assert render_delivery(both(DeliveryMonth(), tmp_path, due)[1]) in fresh.families
    # The open hour, and the hour before it: the idle rule's minutes after it came in.
    assert figures.month.judged_hours == judged + 2


def test_hours_no_file_reaches_are_judged_empty_without_reading(tmp_path: Path) -> None:
    """A month's first build judges every hour since the 1st; a fleet watched for a few
    days has no file in most of them (three empty frames an hour were ~2 s of CPU at
    start-up). Those hours judge without reading, and the month is the same."""
    now = at(2, 5, 30, 30)
    record(tmp_path, now)
    for table in (GPU_MINUTES, DELIVERY_MINUTES, PORT_MINUTES):
        for hour in range(12):  # the monitor started at 1 March 12:00
            (partition_dir(tmp_path, table, at(1).date()) / f"{hour:02d}-test.parquet").unlink()
    month = DeliveryMonth()
    kept, full = both(month, tmp_path, now)
    assert kept == full
    # 00:00-10:59; hour 11 reads its context after (12:00's file), as the whole does.
    assert month.empty_hours == 11 and month.judged_hours == 30
    n1 = next(n for n in kept.nodes if n.node == "n1")
    assert n1.gpu_ms[0]["working"] > 0  # what the files hold was still read
