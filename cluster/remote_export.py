"""Export from a viewer that cannot read the shards' data directory: over NATS.

Every shard answers an ``export`` request from its own history (chunked, as parquet):

- ``gpu`` and ``node`` levels: the shard runs the export itself. A row depends on one
  node's minutes only and a node has one shard, so the viewer concatenates the
  shards' rows, sorts them as an export does and writes the asked format;
- ``fleet`` level: a fleet row mixes every shard's nodes, so the shards send their
  ``gpu_minutes`` rows for the range (and the rolling window before it) and the viewer
  lays them out as one history and runs the same export over it.

Either way the file equals an export over ``DATA/shard=K`` read as one fleet.
"""

from __future__ import annotations

import asyncio
import io
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import polars as pl

from cluster.chunked import Ask, fetch_chunked
from cluster.history import history_root
from cluster.wire import encode, request_subject
from fleet.facade import ExportRequest
from history.aggregate import KEYS
from history.layout import GPU_MINUTES, days_between, partition_dir, read_table
from ledger.export import DEFAULT_ROLLING_WINDOW_S, export_history, parse_time, write_frame


@dataclass(frozen=True, slots=True)
class ShardHistoryFiles:
    """Where a shard's history lies, and how to write out what it holds in memory."""

    data_dir: Path
    flush: Callable[[], None] = lambda: None


class ExportAsk(msgspec.Struct, array_like=True, frozen=True):
    """One shard's part of an export (times resolved against the viewer's ``now``)."""

    since: str
    until: str | None
    level: Literal["gpu", "node", "fleet"]
    resolution: Literal["1m", "1h", "1d"]
    now: Annotated[float, msgspec.Meta(ge=0, le=253_402_300_799)]  # up to year 9999
    rolling_window_s: Annotated[float, msgspec.Meta(ge=0, le=366 * 86400)] = (
        DEFAULT_ROLLING_WINDOW_S
    )


class ExportPart(msgspec.Struct, array_like=True, frozen=True):
    """The shard's rows as parquet, or why there are none."""

    parquet: bytes = b""
    error: str | None = None


_PART = msgspec.msgpack.Decoder(ExportPart)


def shard_export_part(data_dir: Path, ask: ExportAsk) -> ExportPart:
    """What one shard sends for ``ask`` (blocking: run it in a thread, after a flush)."""
    scratch = Path(tempfile.mkdtemp(prefix="gpufleet-export-part-"))
    try:
        if ask.level == "fleet":
            frame = _raw_minutes(data_dir, ask)
        else:
            asked = ExportRequest(
                scratch / "part.parquet", ask.since, ask.until, ask.level, ask.resolution, "parquet"
            )
            frame = pl.read_parquet(export_history(data_dir, asked, now=ask.now))
    except (ValueError, OverflowError, OSError, pl.exceptions.PolarsError) as exc:
        return ExportPart(error=f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = io.BytesIO()
    frame.write_parquet(out, compression="zstd")
    return ExportPart(parquet=out.getvalue())


def _raw_minutes(data_dir: Path, ask: ExportAsk) -> pl.DataFrame:
    # The rows export_history reads for a fleet export: the range and the rolling
    # window before it.
    start = parse_time(ask.since, ask.now) - timedelta(seconds=ask.rolling_window_s)
    end = (
        datetime.fromtimestamp(ask.now, UTC)
        if ask.until is None
        else parse_time(ask.until, ask.now)
    )
    days = list(days_between(start.date(), (end - timedelta(microseconds=1)).date()))
    frame = read_table(data_dir, GPU_MINUTES, days)
    return frame.filter((pl.col("ts") >= start) & (pl.col("ts") < end))


async def fetch_export_parts(
    ask: Ask, shards: Iterable[int], request: ExportRequest, now: float
) -> list[bytes]:
    """Every shard's part of ``request``, in shard order.

    Raises:
        RuntimeError: a shard sent an error (the export would miss its nodes).
    """
    asked = encode(ExportAsk(request.since, request.until, request.level, request.resolution, now))
    parts = []
    for k in sorted(shards):
        subjects = request_subject(k, "export"), request_subject(k, "chunk")
        part = _PART.decode(await fetch_chunked(ask, *subjects, asked))
        if part.error is not None:
            raise RuntimeError(f"shard {k} could not export: {part.error}")
        parts.append(part.parquet)
    return parts


def merge_export(parts: list[bytes], request: ExportRequest, now: float) -> Path:
    """Write the shards' parts as the one file ``request`` asks for (blocking)."""
    frames = [pl.read_parquet(io.BytesIO(p)) for p in parts if p]
    if request.level != "fleet":
        merged = pl.concat(frames, how="vertical_relaxed") if frames else None
        if merged is None:
            raise ValueError("no shard holds history in that range")
        return write_frame(merged.sort(["ts", *KEYS[request.level]]), request)
    scratch = Path(tempfile.mkdtemp(prefix="gpufleet-export-", dir=request.path.parent))
    try:
        for k, frame in enumerate(frames):
            for (day,), rows in frame.group_by(pl.col("ts").dt.date(), maintain_order=True):
                folder = partition_dir(scratch, GPU_MINUTES, day)
                folder.mkdir(parents=True, exist_ok=True)
                rows.write_parquet(folder / f"shards-{k}.parquet")
        return export_history(scratch, request, now=now)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def export_through_shards(
    ask: Ask, shards: set[int], request: ExportRequest, now: float
) -> Path:
    """``request`` exported by every shard and merged here.

    Raises:
        RuntimeError: no shard heard yet, or one could not export.
    """
    if not shards:
        raise RuntimeError("no shard heard yet: nothing to export")
    parts = await fetch_export_parts(ask, shards, request, now)
    return await asyncio.to_thread(merge_export, parts, request, now)


def export_from_folders(history_dir: Path, request: ExportRequest) -> Path:
    """``request`` exported from the shards' folders read as one fleet (blocking)."""
    with history_root(history_dir) as root:
        return export_history(root, request)
