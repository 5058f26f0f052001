"""An hour of minute rollups through the history store: rows held, rewrite CPU, peak RSS.

The recorder's minute close appends one ``gpu_minutes`` frame (a row per GPU) to the
hour's file and queues a rewrite of that file. Two variants, each in its own process,
one after the other in the same run:

- ``whole-hour``: the file is the whole hour (``file_rows`` out of reach), as up to
  a739b4d: the store holds every row of the hour and rewrites all of it each minute;
- ``capped``: :data:`history.store.FILE_ROWS` rows per file (this tree).

Printed per variant: rows and MiB (polars' ``estimated_size``) held at minutes 15, 30
and 60, the largest, the writer's CPU over the hour (process CPU, the tick side is
only the concat), the files written, and the process's peak RSS (``VmHWM``).

``--first-rollup`` instead: what the first minute close leaves resident in a fresh
process (RSS and its file-backed part, i.e. polars' code mapped in), with the minute
series summed by a polars group-by (a739b4d's ``minute_sums``, copied here as the
baseline) and by :func:`history.series.minute_sums` (numpy), each in its own
process, then the first parquet write.

Run: ``PYTHONPATH=. .venv/bin/python bench/bench_hour_files.py [--gpus 8000] [--minutes 60]
[--first-rollup]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from history.layout import GPU_MINUTES, SCHEMAS, partition_files, write_atomic
from history.series import minute_sums
from history.store import FILE_ROWS, HistoryStore

MIB = 1 << 20
T0_MS = 1_800_000_000_000  # 2027-01-15T08:00Z, an hour boundary


def minute_frame(gpus: int, minute: int, rng: np.random.Generator) -> pl.DataFrame:
    """One minute's rollups of ``gpus`` GPUs in the ``gpu_minutes`` schema."""
    nodes = [f"node-{g // 8:05d}" for g in range(gpus)]
    frame = pl.DataFrame(
        {
            "ts": np.full(gpus, T0_MS + minute * 60_000, dtype=np.int64),
            "node": nodes,
            "gpu": np.arange(gpus) % 8,
            "uuid": [f"GPU-{n}-{g % 8:02d}-5f0c2a3e-9b1d-4e7a" for g, n in enumerate(nodes)],
            "util_mean": rng.random(gpus) * 100,
            "util_max": rng.integers(0, 101, gpus),
            "sm_active_mean": rng.random(gpus) * 100,
            "mem_used_mean_bytes": rng.integers(0, 80 << 30, gpus),
            "power_mean_w": rng.random(gpus) * 700,
            "power_max_w": rng.random(gpus) * 700,
            "temp_max_c": rng.integers(30, 90, gpus),
            "verdict": ["ok"] * gpus,
            "samples": np.full(gpus, 60),
            "util_samples": np.full(gpus, 60),
        }
    ).with_columns(pl.col("ts").cast(pl.Datetime("ms")).dt.replace_time_zone("UTC"))
    # The board's serial and bus id: columns of gpu_minutes the bench's GPUs do not have.
    frame = frame.with_columns(serial=pl.lit(None, pl.String), pci_bus_id=pl.lit(None, pl.String))
    return frame.select(list(SCHEMAS[GPU_MINUTES])).cast(SCHEMAS[GPU_MINUTES])  # type: ignore[arg-type]


def held_mib(store: HistoryStore) -> float:
    frames = [f for hour in store._hours.values() for f in hour.frames]
    return sum(f.estimated_size() for f in frames) / MIB


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run_variant(variant: str, gpus: int, minutes: int) -> dict[str, object]:
    rng = np.random.default_rng(7)
    data_dir = Path(tempfile.mkdtemp(prefix="hour-files-"))
    file_rows = FILE_ROWS if variant == "capped" else 1 << 62
    store = HistoryStore(data_dir, "20270115T080000Z-bench0", file_rows=file_rows)
    held: dict[int, tuple[int, float]] = {}
    cpu = 0.0
    for m in range(1, minutes + 1):
        frame = minute_frame(gpus, m - 1, rng)  # made fresh: only the store keeps it
        began = time.process_time()
        store.append(GPU_MINUTES, frame, T0_MS + (m - 1) * 60_000)
        store.write_dirty()
        store.wait()  # one minute's rewrite at a time, as minutes are 60 s apart
        cpu += time.process_time() - began
        del frame
        held[m] = (store.held_rows(), held_mib(store))
    store.close()
    return {
        "held": held,
        "cpu_s": round(cpu, 2),
        "files": len(partition_files(data_dir, GPU_MINUTES)),
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }


def resident_mib() -> tuple[float, float]:
    """(RSS, its file-backed part) in MiB."""
    pages = Path("/proc/self/statm").read_text().split()
    size = 4096 / MIB
    return round(int(pages[1]) * size, 1), round(int(pages[2]) * size, 1)


def polars_group_by_sums(frame: pl.DataFrame) -> pl.DataFrame:
    """a739b4d's minute sums (the baseline)."""
    known = frame.filter(pl.col("util_mean").is_not_null())
    return known.group_by("ts").agg(
        (pl.col("util_mean").cast(pl.Float64) * pl.col("util_samples")).sum().alias("util_sum"),
        pl.col("util_samples").cast(pl.Float64).sum().alias("weight"),
    )


def first_rollup(variant: str, gpus: int) -> dict[str, tuple[float, float]]:
    frame = minute_frame(gpus, 0, np.random.default_rng(7))
    out = {"frame made": resident_mib()}
    if variant == "group-by":
        polars_group_by_sums(frame)
    else:
        minute_sums(frame)
    out["minute summed"] = resident_mib()
    data_dir = Path(tempfile.mkdtemp(prefix="first-rollup-"))
    write_atomic(data_dir / "a.parquet", frame)
    out["first write"] = resident_mib()
    write_atomic(data_dir / "b.parquet", frame)
    out["second write"] = resident_mib()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=8000)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--first-rollup", action="store_true")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant in ("group-by", "numpy"):
        print(json.dumps(first_rollup(args.variant, args.gpus)))
        return
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.gpus, args.minutes)))
        return
    if args.first_rollup:
        print(f"{args.gpus} GPUs: RSS / file-backed MiB after each step of a first minute close")
        for variant in ("group-by", "numpy"):
            cmd = [sys.executable, __file__, "--variant", variant, "--gpus", str(args.gpus)]
            out = json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout)
            steps = "  ".join(f"{step}: {rss} / {mapped}" for step, (rss, mapped) in out.items())
            print(f"{variant:9s} {steps}")
        return
    print(f"{args.gpus} GPUs, {args.minutes} minutes of rollups into one hour, "
          f"{FILE_ROWS:,} rows per capped file")  # fmt: skip
    results = {}
    for variant in ("whole-hour", "capped"):
        cmd = [sys.executable, __file__, "--variant", variant]
        cmd += ["--gpus", str(args.gpus), "--minutes", str(args.minutes)]
        out = json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout)
        results[variant] = out
        held = {int(m): v for m, v in out["held"].items()}
        marks = "  ".join(
            f"min {m}: {held[m][0]:,} rows {held[m][1]:.1f} MiB"
            for m in (15, 30, args.minutes)
            if m in held
        )
        top = max(v[1] for v in held.values())
        print(f"{variant:10s} held {marks}; largest {top:.1f} MiB; rewrite CPU over the "
              f"hour {out['cpu_s']} s; {out['files']} file(s); peak RSS "
              f"{out['peak_rss_mib']} MiB")  # fmt: skip
    old, new = results["whole-hour"], results["capped"]
    print(f"whole-hour/capped: rewrite CPU {old['cpu_s'] / new['cpu_s']:.2f}x; peak RSS "
          f"whole-hour {old['peak_rss_mib'] - new['peak_rss_mib']:+.1f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
