"""History across shards: one directory that the existing readers can read as one fleet.

Shards record into ``DATA/shard=K``. :func:`history_root` gives ``gpufleet sla`` and
``gpufleet export`` a directory in the one-collector layout: every shard's parquet
files linked under their tables and days (names prefixed by the shard), and one
coverage table that is the *intersection* of the shards' coverage. A minute counts
as monitored only when every shard was recording: while a shard is gone its nodes
have no intervals, and the SLA math would otherwise count them as down (the
provider's fault) when the monitor was at fault. Where per-node coverage lands in
the ledger, this intersection can give way to it.

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

from fleet.history.layout import (
    COVERAGE,
    SCHEMAS,
    day_of_ms,
    day_start_ms,
    partition_days,
    partition_dir,
    partition_files,
    partitioned_tables,
    write_atomic,
)
from fleet.history.reader import load_coverage

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


def intersect_spans(per_shard: Sequence[Sequence[tuple[int, int]]]) -> list[tuple[int, int]]:
    """The times covered by every one of the span lists (each sorted or not)."""
    if not per_shard:
        return []
    result = _merge(per_shard[0])
    for spans in per_shard[1:]:
        other = _merge(spans)
        out = []
        i = j = 0
        while i < len(result) and j < len(other):
            start = max(result[i][0], other[j][0])
            end = min(result[i][1], other[j][1])
            if start < end:
                out.append((start, end))
            if result[i][1] < other[j][1]:
                i += 1
            else:
                j += 1
        result = out
    return result


def _merge(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        elif e > s:
            merged.append((s, e))
    return merged


def build_union(shards: Sequence[Path], into: Path) -> None:
    """Lay out ``shards``' history in ``into`` as one collector's directory."""
    tables = sorted({t for shard in shards for t in partitioned_tables(shard)} - {COVERAGE})
    for table in tables:
        for shard in shards:
            for path in partition_files(shard, table):
                target = into / table / path.parent.name / f"{shard.name}-{path.name}"
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(path.resolve(), target)
    _write_coverage(shards, into)


def _write_coverage(shards: Sequence[Path], into: Path) -> None:
    per_shard = []
    for shard in shards:
        days = partition_days(shard, COVERAGE)
        per_shard.append(load_coverage(shard, days[0], days[-1]) if days else [])
    by_day: dict[date, list[tuple[int, int]]] = {}
    for start, end in intersect_spans(per_shard):
        while start < end:  # cut at UTC midnight, as recorders write it
            day = day_of_ms(start)
            cut = min(end, day_start_ms(day) + DAY_MS)
            by_day.setdefault(day, []).append((start, cut))
            start = cut
    (into / COVERAGE).mkdir(parents=True, exist_ok=True)
    for day, spans in by_day.items():
        frame = pl.DataFrame(
            {"start": [s for s, _ in spans], "end": [e for _, e in spans]},
            schema={"start": pl.Int64, "end": pl.Int64},
        ).select(pl.col(c).cast(SCHEMAS[COVERAGE][c]) for c in ("start", "end"))
        write_atomic(partition_dir(into, COVERAGE, day) / "shards.parquet", frame)


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
