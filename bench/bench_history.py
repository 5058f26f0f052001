"""History benchmarks (docs: bench/results/history.md).

1. One tick of 8,000 GPUs into the history, against a polars append per node message
   (``pl.concat`` and ``vstack`` of an 8-row frame per message) in the same run. The
   ticks come from the real ``FleetRuntime`` fed canned agent lines (bench/lib/fleet_states.py),
   so the recorder reads the tick's columns as in ``serve``; ``--source objects`` hands it
   snapshots built from GpuSnapshot objects instead (no columns: the fallback path).
2. Bytes per full-resolution GPU-sample held in the ring.
3. Export of one month of 1-minute rollups for 256 GPUs (11 M rows), generated directly
   as day partitions, to parquet and CSV: time and size.

Run: ``.venv/bin/python bench/bench_history.py [--ticks 120] [--skip-export]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import numpy as np
import polars as pl

from fleet.facade import ExportRequest
from fleet.model import FleetSnapshot
from history import HistoryRecorder
from history.layout import GPU_MINUTES, SCHEMAS, partition_dir, write_atomic
from history.section import HistorySection
from history.states import StateInterval
from ledger.export import export_history
from ledger.sla import sla_summary
from ledger.sla.section import SlaSection
from testkit.synthetic_history import snapshot

sys.path.append(str(Path(__file__).resolve().parent / "lib"))
from fleet_states import state_ticks  # bench/ is not a package: found on the path above

T0 = datetime(2026, 9, 1, tzinfo=UTC).timestamp()


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def fleet_ticks(ticks: int, source: str) -> list[FleetSnapshot]:
    """``ticks`` snapshots of 1,000 nodes x 8 GPUs, one per second."""
    if source == "state":
        return state_ticks(1000, ticks, t0=T0)
    base = snapshot(T0, 1000, 8)
    # A new tuple each tick, as FleetState builds when nodes sent samples (the recorder
    # reuses the previous frame when it is handed the very same tuple).
    return [FleetSnapshot(taken_at=T0 + i, nodes=tuple(list(base.nodes))) for i in range(ticks)]


def bench_ticks(
    snaps: list[FleetSnapshot], data_dir: Path | None
) -> tuple[list[float], HistoryRecorder]:
    """Seconds per ``record`` call, one call per snapshot."""
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: T0)
    costs = []
    for snap in snaps:
        start = time.thread_time()  # CPU of this thread: the tick's cost, not the neighbours'
        recorder.record(snap)
        costs.append(time.thread_time() - start)
    return costs, recorder


def bench_append_per_message(base: FleetSnapshot, how: str) -> float:
    """Seconds for one tick appended the naive way: one 8-row polars frame per node message."""
    start = time.thread_time()
    history: pl.DataFrame | None = None
    for node in base.nodes:
        frame = pl.DataFrame(
            {
                "ts": [base.taken_at] * len(node.gpus),
                "node": [node.name] * len(node.gpus),
                "gpu": [g.index for g in node.gpus],
                "util": [g.util_gpu for g in node.gpus],
                "sm_active": [g.sm_active for g in node.gpus],
                "mem_used": [g.mem_used_bytes for g in node.gpus],
                "power_w": [g.power_w for g in node.gpus],
                "temp_c": [g.temp_c for g in node.gpus],
                "verdict": [g.verdict for g in node.gpus],
            }
        )
        if history is None:
            history = frame
        elif how == "concat":
            history = pl.concat([history, frame])
        else:
            history = history.vstack(frame)
    if how == "vstack" and history is not None:
        history = history.rechunk()
    return time.thread_time() - start


def month_of_rollups(data_dir: Path, gpus: int, days: int) -> int:
    """Write ``days`` of 1-minute rollups for ``gpus`` GPUs as hourly files; returns rows."""
    rng = np.random.default_rng(7)
    names = [f"gpu-{g // 8:04d}" for g in range(gpus)]
    uuids = [f"GPU-{g:06d}" for g in range(gpus)]
    rows = 0
    for hour in range(days * 24):
        start = datetime.fromtimestamp(T0, UTC) + timedelta(hours=hour)
        n = 60 * gpus
        minute = np.repeat(np.arange(60, dtype=np.int64), gpus)
        frame = pl.DataFrame(
            {
                "ts": int(start.timestamp() * 1000) + minute * 60_000,
                "node": names * 60,
                "gpu": np.tile(np.arange(gpus) % 8, 60),
                "uuid": uuids * 60,
                "util_mean": rng.uniform(0, 100, n),
                "util_max": rng.integers(0, 101, n),
                "sm_active_mean": rng.uniform(0, 100, n),
                "mem_used_mean_bytes": rng.integers(0, 80 << 30, n),
                "power_mean_w": rng.uniform(80, 700, n),
                "power_max_w": rng.uniform(80, 700, n),
                "temp_max_c": rng.integers(30, 90, n),
                "verdict": ["ok"] * n,
                "samples": np.full(n, 60),
                "util_samples": np.full(n, 60),
            }
        ).with_columns(pl.col("ts").cast(pl.Datetime("ms", "UTC")))
        # The board's serial and bus id: columns of gpu_minutes the bench's GPUs do not have.
        frame = frame.with_columns(
            serial=pl.lit(None, pl.String), pci_bus_id=pl.lit(None, pl.String)
        )
        frame = frame.select(list(SCHEMAS[GPU_MINUTES])).cast(SCHEMAS[GPU_MINUTES])  # type: ignore[arg-type]
        folder = partition_dir(data_dir, GPU_MINUTES, start.date())
        write_atomic(folder / f"{start.hour:02d}-bench.parquet", frame)
        rows += n
    return rows


def bench_sla_summary() -> None:
    """Month-to-date SLA header from a live recorder: 1,000 nodes, 10 outages each."""
    recorder = HistoryRecorder(None, HistorySection(), clock=lambda: T0)
    rows = []
    for n in range(1000):
        t = int(T0 * 1000)
        for k in range(10):
            up_until = t + (2 + (n + k) % 5) * 3_600_000
            rows.append(StateInterval(f"gpu-{n:04d}", "up", t, up_until))
            t = up_until + (5 + (n * k) % 90) * 60_000
            rows.append(StateInterval(f"gpu-{n:04d}", "broken", up_until, t, ("xid 79",)))
        rows.append(StateInterval(f"gpu-{n:04d}", "up", t, None))
    recorder.states.adopt("node_states/bench.parquet", rows)
    recorder.coverage.earlier = [(int(T0 * 1000), int(T0 * 1000) + 20 * 86_400_000)]
    contract = SlaSection(committed_nodes=1000, grace_minutes=30, gpu_hour_price=Decimal("2.37"))
    now = T0 + 20 * 86400
    start = time.process_time()
    summary = sla_summary(recorder, contract, now)
    cpu = time.process_time() - start
    print(f"sla_summary(): 1,000 nodes, {len(rows):,} intervals month to date: {ms(cpu)} CPU "
          f"(availability {summary.availability_pct:.3f} %)")  # fmt: skip


def bench_hour_rewrite(scratch: Path) -> None:
    """The background writer's worst minute: rewriting a full hour file of 8,000 GPUs."""
    month_of_rollups(scratch / "hour", 8000, 1)
    path = next((scratch / "hour").rglob("23-bench.parquet"))
    frame = pl.read_parquet(path)
    cpu, wall = time.process_time(), time.perf_counter()
    write_atomic(path, frame)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    size = path.stat().st_size / 2**20
    print(f"hour file rewrite, 8,000 GPUs x 60 min ({frame.height:,} rows, {size:.1f} MiB): "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU, on the writer thread")  # fmt: skip


def bench_export(scratch: Path) -> None:
    data_dir = scratch / "month"
    start = time.perf_counter()
    rows = month_of_rollups(data_dir, 256, 30)
    print(f"generated {rows:,} rows of gpu_minutes in {time.perf_counter() - start:.1f} s")
    now = T0 + 31 * 86400
    for level, resolution, fmt in (
        ("gpu", "1m", "parquet"),
        ("gpu", "1m", "csv"),
        ("node", "1h", "csv"),
        ("fleet", "1m", "parquet"),
    ):
        out = scratch / f"export-{level}-{resolution}.{fmt}"
        request = ExportRequest(
            path=out, since="2026-09-01", until="2026-10-01", level=level,  # type: ignore[arg-type]
            resolution=resolution, format=fmt,  # type: ignore[arg-type]
        )  # fmt: skip
        cpu, wall = time.process_time(), time.perf_counter()
        export_history(data_dir, request, now=now)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        height = (
            pl.scan_parquet(out).select(pl.len()).collect().item() if fmt == "parquet" else None
        )
        shown = f"{height:,} rows" if height is not None else ""
        size = out.stat().st_size / 2**20
        print(f"export {level}/{resolution} -> {fmt}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
              f"{size:.1f} MiB {shown}")  # fmt: skip
        out.unlink()
    start = time.perf_counter()
    recorder = HistoryRecorder(data_dir, HistorySection(), clock=lambda: now - 86400)
    opened = time.perf_counter() - start
    recorder.wait_resumed()
    print(f"recorder start on that month: open {opened:.3f} s, 8 days of fleet utilization "
          f"resumed on a thread in {time.perf_counter() - start:.2f} s")  # fmt: skip
    recorder.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=150)
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--source", choices=("state", "objects"), default="state")
    args = parser.parse_args()

    snaps = fleet_ticks(args.ticks, args.source)
    costs, recorder = bench_ticks(snaps, None)
    steady = sorted(costs[1:])
    per_tick = statistics.median(steady)
    p95 = steady[int(len(steady) * 0.95)]
    print(f"record(): 8,000 GPUs ({args.source}), {args.ticks} ticks in memory, CPU per tick: "
          f"median {ms(per_tick)}, p95 {ms(p95)}, "
          f"max {ms(steady[-1])} (a minute boundary)")  # fmt: skip
    mib = recorder.ring.nbytes() / 2**20
    print(f"ring: {recorder.ring_bytes_per_sample():.1f} bytes per GPU-sample "
          f"({recorder.ring.samples():,} samples, {mib:.1f} MiB)")  # fmt: skip

    with tempfile.TemporaryDirectory() as scratch:
        disk_costs, disk = bench_ticks(snaps, Path(scratch))
        disk.close()
        on_disk = statistics.median(sorted(disk_costs[1:]))
        print(f"record(): 8,000 GPUs, recording to disk, CPU of the tick thread: median "
              f"{ms(on_disk)}, max {ms(max(disk_costs[1:]))}")  # fmt: skip

    base = snapshot(T0, 1000, 8)
    for how in ("concat", "vstack"):
        naive = statistics.median(bench_append_per_message(base, how) for _ in range(3))
        print(f"baseline, polars {how} per node message: {ms(naive)} per tick -> "
              f"ours is {naive / per_tick:.0f}x cheaper")  # fmt: skip

    bench_sla_summary()
    with tempfile.TemporaryDirectory() as scratch:
        bench_hour_rewrite(Path(scratch))
    if not args.skip_export:
        with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
            bench_export(Path(scratch))


if __name__ == "__main__":
    main()
