"""Export over NATS from a viewer that cannot read the shards' data directory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from cluster.attach import AttachedFleet
from cluster.chunked import ChunkStore
from cluster.history import history_root
from cluster.natsd import LocalNats
from cluster.publisher import ShardPublisher
from cluster.remote_export import (
    ExportAsk,
    ExportPart,
    ShardHistoryFiles,
    fetch_export_parts,
    shard_export_part,
)
from cluster.shards import ShardSpec
from cluster.wire import encode
from fleet.facade import ExportRequest
from gpufleet.shard import shard_data_dir
from ledger.export import export_history
from testkit.static_fleet import StaticFleet
from tests.cluster.recorded import fleet_ticks, only, record
from tests.runtime.waits import wait_until

DAY = {"since": "2026-10-10", "until": "2026-10-11"}
ASKED: list[dict[str, Any]] = [
    {"level": "gpu", "resolution": "1m", "format": "csv"},
    {"level": "node", "resolution": "1h", "format": "json"},
    {"level": "fleet", "resolution": "1m", "format": "parquet"},
    {"level": "fleet", "resolution": "1h", "format": "csv"},
]


def same_file(got: Path, want: Path) -> bool:
    if got.suffix == ".parquet":
        return pl.read_parquet(got).equals(pl.read_parquet(want))
    return got.read_bytes() == want.read_bytes()


@pytest.mark.e2e
async def test_a_remote_viewer_exports_what_a_local_export_gives(
    tmp_path: Path, nats_server: LocalNats
) -> None:
    data = tmp_path / "data"
    ticks = fleet_ticks(nodes=6, seconds=300)
    specs = [ShardSpec(k, 3) for k in (1, 2, 3)]
    for spec in specs:
        record(shard_data_dir(data, spec), ticks, spec)
    shards = [StaticFleet([only(ticks[-1], spec)]) for spec in specs]
    publishers = [
        ShardPublisher(
            fleet,
            spec,
            nats_server.url,
            interval=0.2,
            files=ShardHistoryFiles(shard_data_dir(data, spec)),
            chunk_bytes=1024,  # a part (4-6 kB) is several chunks, pulled one by one
        )
        for fleet, spec in zip(shards, specs, strict=True)
    ]
    viewer = AttachedFleet(nats_server.url, tick_s=0.2)  # no data directory of its own
    try:
        for publisher in publishers:
            await publisher.start()
        await viewer.start()

        def heard_all() -> bool:
            for fleet, spec in zip(shards, specs, strict=True):
                fleet.push(only(ticks[-1], spec))  # the shards keep ticking
            return {k for k, _ in viewer.board.shards} == {1, 2, 3}

        await wait_until(heard_all, 20, "every shard's summary")
        for asked in ASKED:
            name = f"{asked['level']}-{asked['resolution']}.{asked['format']}"
            got = await viewer.export(
                ExportRequest(path=tmp_path / "remote" / name, **DAY, **asked)
            )
            with history_root(data) as root:
                local = ExportRequest(path=tmp_path / "local" / name, **DAY, **asked)
                want = export_history(root, local)
            assert same_file(got, want), name
            assert pl.read_parquet(got).height if got.suffix == ".parquet" else got.stat().st_size
        assert all(p._chunks.pending == 0 for p in publishers)  # every chunk was read
        nodes = pl.read_csv(tmp_path / "remote" / "gpu-1m.csv")["node"].unique().sort()
        assert nodes.to_list() == [f"gpu-000{n}" for n in range(6)]  # every shard's nodes
    finally:
        await viewer.stop()
        for publisher in publishers:
            await publisher.stop()


async def test_a_shard_that_cannot_export_fails_the_export_by_name(tmp_path: Path) -> None:
    now = time.time()
    empty = shard_export_part(tmp_path / "nothing", ExportAsk("7d", None, "node", "1h", now))
    assert empty.error is None  # no history is no rows, not an error

    async def ask(subject: str, payload: bytes) -> bytes:
        broken = ExportPart(error="OSError: disk gone")
        return ChunkStore().first(encode(broken if ".2." in subject else empty))

    request = ExportRequest(path=tmp_path / "x.csv")
    with pytest.raises(RuntimeError, match="shard 2 could not export: OSError: disk gone"):
        await fetch_export_parts(ask, [1, 2, 3], request, now)
    asked = ExportAsk("7d", "8d", "node", "1h", now)  # until before since
    assert "nothing to export" in (shard_export_part(tmp_path, asked).error or "")
