"""The on-disk contract: tables, day partitions, schemas, atomic writes, tolerant reads.

Every table lives in ``<data_dir>/<table>/date=YYYY-MM-DD/*.parquet`` (UTC days). A
file is written to a hidden temporary name in the same folder, fsynced and renamed
over its final name, so a reader (or a crash) only ever sees complete files. Readers
take ``*.parquet`` and nothing else, so temporaries are never read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl

log = logging.getLogger(__name__)

GPU_MINUTES = "gpu_minutes"
NODE_STATES = "node_states"
EVENTS = "events"
COVERAGE = "coverage"
MONITOR_GAPS = "monitor_gaps"  # layout version 2
DELIVERY_MINUTES = "delivery_minutes"  # layout version 2, added later: absent reads as empty
PORT_MINUTES = "port_minutes"  # layout version 2, added later: absent reads as empty
TABLES = (GPU_MINUTES, NODE_STATES, EVENTS, COVERAGE, MONITOR_GAPS, DELIVERY_MINUTES, PORT_MINUTES)
LOCK_FILE = "recorder.lock"
HEARTBEAT_FILE = "recorder.heartbeat"  # layout version 2
LAYOUT_FILE = "layout.json"  # {"version": 2}; absent in a version-1 directory
LAYOUT_VERSION = 2
TMP_PREFIX = ".tmp-"

TS = pl.Datetime("ms", "UTC")
SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    GPU_MINUTES: {
        "ts": TS,
        "node": pl.String(),
        "gpu": pl.UInt16(),
        "uuid": pl.String(),
        "serial": pl.String(),  # null in files written before it was recorded
        "pci_bus_id": pl.String(),
        "util_mean": pl.Float32(),
        "util_max": pl.UInt8(),
        "sm_active_mean": pl.Float32(),
        "mem_used_mean_bytes": pl.UInt64(),
        "power_mean_w": pl.Float32(),
        "power_max_w": pl.Float32(),
        "temp_max_c": pl.UInt8(),
        "verdict": pl.String(),
        "samples": pl.UInt16(),
        "util_samples": pl.UInt16(),
    },
    NODE_STATES: {
        "node": pl.String(),
        "state": pl.String(),
        "start": TS,
        "end": TS,
        "reasons": pl.List(pl.String()),
    },
    EVENTS: {
        "ts": TS,
        "node": pl.String(),
        "gpu": pl.UInt16(),
        "uuid": pl.String(),
        "kind": pl.String(),
        "code": pl.Int64(),
        "detail": pl.String(),
    },
    COVERAGE: {"start": TS, "end": TS},
    MONITOR_GAPS: {"start": TS, "end": TS, "cause": pl.String()},
    DELIVERY_MINUTES: {  # what the delivery ledger judges, per GPU and minute
        "ts": TS,
        "node": pl.String(),
        "gpu": pl.UInt16(),
        "energy_mj": pl.UInt64(),  # NVML total energy counter at the minute's last sample
        "power_limit_w": pl.Float32(),
        "pcie_gen": pl.UInt8(),
        "pcie_gen_max": pl.UInt8(),
        "pcie_width": pl.UInt8(),
        "pcie_width_max": pl.UInt8(),
        "mem_total_bytes": pl.UInt64(),
        "foreign_mem_bytes": pl.UInt64(),  # held by processes that are not the renter's
        "provider_busy": pl.Boolean(),  # a provider process alone on a busy GPU (last reading)
        "gpu_name": pl.String(),  # NVML's name of the GPU
        "nvlink_up": pl.UInt8(),  # NVLink links up
        "driver": pl.String(),  # the node's NVIDIA driver version
        "ports_active": pl.UInt16(),  # the node's IB/RoCE/EFA ports ACTIVE; null: a state unknown
    },
    PORT_MINUTES: {  # each network port of each node, per minute (the minute's last reading)
        "ts": TS,
        "node": pl.String(),
        "port": pl.String(),  # e.g. mlx5_0/1
        "kind": pl.String(),  # ib | roce | efa
        "state": pl.String(),  # ACTIVE, DOWN, ...
        "rate_gbps": pl.Float32(),
    },
}

_DAY_DIR = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")


def empty_frame(table: str) -> pl.DataFrame:
    """A frame with ``table``'s schema and no rows."""
    return pl.DataFrame(schema=SCHEMAS[table])


def day_of_ms(ms: int) -> date:
    """The UTC day holding the instant ``ms`` (milliseconds since the epoch)."""
    return datetime.fromtimestamp(ms / 1000, UTC).date()


def day_start_ms(day: date) -> int:
    """Milliseconds since the epoch at 00:00 UTC of ``day``."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()) * 1000


def partition_dir(data_dir: Path, table: str, day: date) -> Path:
    """``<data_dir>/<table>/date=YYYY-MM-DD``."""
    return data_dir / table / f"date={day.isoformat()}"


def partition_days(data_dir: Path, table: str) -> list[date]:
    """The days that have a partition folder for ``table``, oldest first."""
    root = data_dir / table
    if not root.is_dir():
        return []
    days = []
    for child in root.iterdir():
        match = _DAY_DIR.match(child.name)
        if match and child.is_dir():
            days.append(date.fromisoformat(match.group(1)))
    return sorted(days)


def days_between(first: date, last: date) -> Iterator[date]:
    """Every day from ``first`` to ``last`` inclusive."""
    day = first
    while day <= last:
        yield day
        day += timedelta(days=1)


def partition_files(data_dir: Path, table: str, days: list[date] | None = None) -> list[Path]:
    """Complete parquet files of ``table`` (of ``days`` when given), in time order."""
    wanted = partition_days(data_dir, table) if days is None else days
    files: list[Path] = []
    for day in wanted:
        folder = partition_dir(data_dir, table, day)
        if folder.is_dir():
            files.extend(sorted(folder.glob("[!.]*.parquet")))
    return files


def read_file(path: Path, table: str) -> pl.DataFrame | None:
    """Read one partition file in the table's schema; None (and a warning) if unreadable."""
    try:
        frame = pl.read_parquet(path)
        if table == GPU_MINUTES and "util_samples" not in frame.columns:
            # Written before util_samples existed: every tick had a reading, as far as we know.
            frame = frame.with_columns(pl.col("samples").alias("util_samples"))
        return frame.select(
            pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype).alias(name)
            for name, dtype in SCHEMAS[table].items()
        )
    except Exception as exc:  # polars raises several types for damaged files
        log.warning("skipping unreadable history file %s: %s", path, exc)
        return None


def read_table(data_dir: Path, table: str, days: list[date] | None = None) -> pl.DataFrame:
    """Every readable row of ``table`` (of ``days`` when given); damaged files are skipped."""
    frames = [
        frame
        for path in partition_files(data_dir, table, days)
        if (frame := read_file(path, table)) is not None
    ]
    return pl.concat(frames) if frames else empty_frame(table)


def write_atomic(path: Path, frame: pl.DataFrame) -> None:
    """Write ``frame`` to ``path``: temporary file, fsync, rename, fsync of the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            frame.write_parquet(handle, compression="zstd", statistics=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the folder's entry is on disk.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def layout_version(data_dir: Path) -> int:
    """The directory's layout version: 1 when no ``layout.json`` says otherwise."""
    try:
        return int(json.loads((data_dir / LAYOUT_FILE).read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return 1


def write_layout_version(data_dir: Path) -> None:
    """Stamp the directory with this code's layout version (older readers ignore the file)."""
    if layout_version(data_dir) >= LAYOUT_VERSION:
        return
    tmp = data_dir / f"{TMP_PREFIX}{LAYOUT_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps({"version": LAYOUT_VERSION}) + "\n", encoding="utf-8")
    os.replace(tmp, data_dir / LAYOUT_FILE)


def partitioned_tables(data_dir: Path) -> list[str]:
    """Every day-partitioned table in the directory: ours and others' (e.g. ``probes``)."""
    if not data_dir.is_dir():
        return []
    return sorted(
        child.name
        for child in data_dir.iterdir()
        if child.is_dir() and any(_DAY_DIR.match(d.name) for d in child.iterdir())
    )


def remove_temporaries(data_dir: Path) -> int:
    """Delete temporaries a killed writer left behind; returns how many were removed."""
    removed = 0
    for tmp in data_dir.glob(f"{TMP_PREFIX}*"):  # heartbeat and layout stamp
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed += 1
    for table in partitioned_tables(data_dir):
        for tmp in (data_dir / table).glob(f"date=*/{TMP_PREFIX}*"):
            with contextlib.suppress(OSError):
                tmp.unlink()
                removed += 1
    return removed


def delete_partitions_before(
    data_dir: Path, table: str, first_kept: date, keep: frozenset[date] = frozenset()
) -> list[date]:
    """Delete ``table``'s day partitions older than ``first_kept`` (except ``keep``)."""
    deleted = []
    for day in partition_days(data_dir, table):
        if day < first_kept and day not in keep:
            shutil.rmtree(partition_dir(data_dir, table, day), ignore_errors=True)
            deleted.append(day)
    return deleted
