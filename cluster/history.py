"""History across shards: one directory that the existing readers can read as one fleet.

Shards record into ``DATA/shard=K``. :func:`history_root` gives ``gpufleet sla`` and
``gpufleet export`` a directory in the one-collector layout: every shard's parquet
files linked under their tables and days (names prefixed by the shard), coverage that
is the *union* of the shards' (the fleet was monitored while any shard recorded), and
node state intervals with per-node coverage (``cluster.node_coverage``): while a
shard is gone, its own nodes' minutes are ``unmonitored`` and nobody else's are.

Object storage is the next step (polars and DuckDB read parquet from S3 URLs);
this module works on local paths.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path

import polars as pl

from cluster.node_coverage import (
    ShardHistory,
    fleet_coverage,
    intervals_across_shards,
    shard_gaps,
)
from history.gaps import GapBook
from history.layout import (
    COVERAGE,
    NODE_STATES,
    SCHEMAS,
    day_of_ms,
    day_start_ms,
    partition_days,
    partition_dir,
    partition_files,
    partitioned_tables,
    write_atomic,
)
from history.reader import load_coverage, load_intervals
from history.states import StateInterval, to_frame

_SHARD_DIR = re.compile(r"^shard=(\d+)$")
DAY_MS = 86_400_000


def shard_dirs(data_dir: Path) -> list[Path]:
    """``DATA/shard=K`` directories, by K; empty for a one-collector directory."""
    if not data_dir.is_dir():
        return []
    found = []
    for child in data_dir.iterdir():
        match = _SHARD_DIR.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    return [path for _, path in sorted(found)]


def build_union(shards: Sequence[Path], into: Path) -> None:
    """Lay out ``shards``' history in ``into`` as one collector's directory."""
    skip = {COVERAGE, NODE_STATES}
    tables = sorted({t for shard in shards for t in partitioned_tables(shard)} - skip)
    for table in tables:
        for shard in shards:
            for path in partition_files(shard, table):
                target = into / table / path.parent.name / f"{shard.name}-{path.name}"
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(path.resolve(), target)
    histories = [_shard_history(shard) for shard in shards]
    _write_coverage(fleet_coverage(histories), into)
    _write_states(intervals_across_shards(histories), into)
    _write_gaps(histories, into)


def _write_gaps(histories: list[ShardHistory], into: Path) -> None:
    """Each shard's silent stretches as monitor gaps beside the shards' own."""
    book = GapBook("shards.parquet")
    for gap in shard_gaps(histories):
        book.add(gap.start_ms, gap.end_ms, gap.cause)
    for relative, frame in book.take_dirty().items():
        write_atomic(into / relative, frame)


def _shard_history(shard: Path) -> ShardHistory:
    days = partition_days(shard, COVERAGE)
    coverage = load_coverage(shard, days[0], days[-1]) if days else []
    return ShardHistory(shard.name, coverage, load_intervals(shard))


def _write_coverage(spans: list[tuple[int, int]], into: Path) -> None:
    by_day: dict[date, list[tuple[int, int]]] = {}
    for start, end in spans:
        while start < end:  # cut at UTC midnight, as recorders write it
            day = day_of_ms(start)
            cut = min(end, day_start_ms(day) + DAY_MS)
            by_day.setdefault(day, []).append((start, cut))
            start = cut
    (into / COVERAGE).mkdir(parents=True, exist_ok=True)
    for day, day_spans in by_day.items():
        frame = pl.DataFrame(
            {"start": [s for s, _ in day_spans], "end": [e for _, e in day_spans]},
            schema={"start": pl.Int64, "end": pl.Int64},
        ).select(pl.col(c).cast(SCHEMAS[COVERAGE][c]) for c in ("start", "end"))
        write_atomic(partition_dir(into, COVERAGE, day) / "shards.parquet", frame)


def _write_states(intervals: list[StateInterval], into: Path) -> None:
    by_day: dict[date, list[StateInterval]] = {}
    for interval in intervals:  # an interval lives in the partition of its start day
        by_day.setdefault(day_of_ms(interval.start_ms), []).append(interval)
    for day, rows in by_day.items():
        write_atomic(partition_dir(into, NODE_STATES, day) / "shards.parquet", to_frame(rows))


@contextlib.contextmanager
def history_root(data_dir: Path) -> Iterator[Path]:
    """``data_dir`` itself for one collector; for shards, a union of them (while open)."""
    shards = shard_dirs(data_dir)
    if not shards:
        yield data_dir
        return
    into = Path(tempfile.mkdtemp(prefix="gpufleet-shards-"))
    try:
        build_union(shards, into)
        yield into
    finally:
        shutil.rmtree(into, ignore_errors=True)
