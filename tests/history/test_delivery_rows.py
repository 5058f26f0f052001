"""A minute's delivery and port rows read column by column from the tick's rows are the
rows the GPU objects give, and the frame is the one a row-by-row build gives (the
parquet files keep their bytes); DuckDB reads them back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import duckdb
import polars as pl

from bench.lib.fleet_states import state_ticks
from fleet.model import FleetSnapshot, NodeSnapshot
from history.delivery_rows import (
    MIB,
    TEXT_MAX,
    U8_MAX,
    U64_MAX,
    delivery_rows,
    port_rows,
    ports_active,
)
from history.layout import DELIVERY_MINUTES, PORT_MINUTES, SCHEMAS, write_atomic
from tests.history.test_steady_columns import _odd_hello, _odd_slow

MINUTE_MS = 1_800_000_000_000 - 1_800_000_000_000 % 60_000


def _hostile_hello(line: bytes, node: int, tick: int) -> bytes:
    hello = json.loads(_odd_hello(line, node, tick))
    if node == 6:
        hello["gpus"][1]["name"] = "x" * (TEXT_MAX + 1)  # too long: no reading
        hello["gpus"][2]["name"] = 'H100 "80GB" \\ %s'
        hello["driver"] = ""
    return json.dumps(hello).encode() + b"\n"


def _hostile_sample(line: bytes, node: int, tick: int) -> bytes:
    sample = json.loads(_odd_slow(line, node, tick))
    if node == 7 and tick >= 2:
        sample["gpus"][3] = None  # a lost GPU: no delivery row
    slow = sample.get("slow")
    if slow and node == 6:
        fields = _slow_fields()
        slow[0][fields.index("energy_mj")] = -5  # out of range: no reading
        slow[1][fields.index("pcie_gen")] = 300
        slow[2][fields.index("foreign_mem_mib")] = U64_MAX  # as bytes, beyond UInt64
        slow[3][fields.index("foreign_procs")] = 2  # a provider process ...
        slow[3][fields.index("renter_procs")] = 0  # ... alone on a busy GPU
        slow[4][fields.index("foreign_procs")] = 1
        slow[4][fields.index("renter_procs")] = 1
        slow[5][fields.index("foreign_procs")] = 0
        slow[6][fields.index("nvlink_active")] = -1
        slow[7][fields.index("power_limit_w")] = 2.0**53 + 1  # the largest the decoder lets by
    return json.dumps(sample).encode() + b"\n"


def _slow_fields() -> list[str]:
    from collectors.agent.fields import GPU_SLOW_FIELDS

    return list(GPU_SLOW_FIELDS)


def _ticks() -> list[FleetSnapshot]:
    return state_ticks(8, 12, _hostile_sample, edit_hello=_hostile_hello)


def _detached(snapshot: FleetSnapshot) -> tuple[NodeSnapshot, ...]:
    return tuple(node.detached() for node in snapshot.nodes)


def _bounded(value: int | None, top: int) -> int | None:
    return value if value is not None and 0 <= value <= top else None


def _text(value: str | None) -> str | None:
    return value if value is not None and 0 < len(value) <= TEXT_MAX else None


def _rows_frame(rows: Sequence[tuple[object, ...]], table: str) -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema=list(SCHEMAS[table]), orient="row")
    return frame.with_columns(pl.col("ts").cast(pl.Int64)).cast(SCHEMAS[table])  # type: ignore[arg-type]


def delivery_rows_one_by_one(nodes: tuple[NodeSnapshot, ...], minute_ms: int) -> pl.DataFrame:
    """The rows as they were built before: one tuple per GPU object, then one frame."""
    rows = []
    for node in nodes:
        driver, active = _text(node.driver), ports_active(node)
        for gpu in node.gpus:
            if gpu.lost:
                continue
            foreign = _bounded(gpu.foreign_mem_mib, U64_MAX // MIB)
            busy = None
            if gpu.foreign_procs is not None:
                active_gpu = bool(gpu.util_gpu) or bool(gpu.sm_active)
                busy = gpu.foreign_procs > 0 and not gpu.renter_procs and active_gpu
            rows.append((
                minute_ms, node.name, gpu.index, _bounded(gpu.energy_mj, U64_MAX),
                gpu.power_limit_w, _bounded(gpu.pcie_gen, U8_MAX),
                _bounded(gpu.pcie_gen_max, U8_MAX), _bounded(gpu.pcie_width, U8_MAX),
                _bounded(gpu.pcie_width_max, U8_MAX), gpu.memory_total_bytes,
                None if foreign is None else foreign * MIB, busy, _text(gpu.name),
                _bounded(gpu.nvlink_active, U8_MAX), driver, active,
            ))  # fmt: skip
    return _rows_frame(rows, DELIVERY_MINUTES)


def test_delivery_rows_from_the_ticks_rows_are_the_objects_rows() -> None:
    for snapshot in _ticks():
        fast = delivery_rows(snapshot.nodes, MINUTE_MS)
        oracle = delivery_rows_one_by_one(_detached(snapshot), MINUTE_MS)
        assert fast.schema == oracle.schema
        assert fast.to_dicts() == oracle.to_dicts()
        assert delivery_rows(_detached(snapshot), MINUTE_MS).to_dicts() == oracle.to_dicts()
    rows = fast.to_dicts()
    # The cases are in the rows, not vacuous.
    assert len(rows) == 8 * 8 - 1  # node 7's lost GPU has no row
    node6 = [r for r in rows if r["node"] == "node-007"]
    assert node6[0]["energy_mj"] is None and node6[1]["pcie_gen"] is None
    assert node6[1]["gpu_name"] is None and node6[2]["gpu_name"] == 'H100 "80GB" \\ %s'
    assert node6[2]["foreign_mem_bytes"] is None and node6[6]["nvlink_up"] is None
    assert [r["provider_busy"] for r in node6[3:6]] == [True, False, False]
    assert node6[7]["power_limit_w"] == 2.0**53 and node6[0]["driver"] is None


def test_a_node_mixed_from_objects_and_rows_keeps_node_order() -> None:
    snapshot = _ticks()[-1]
    nodes = list(snapshot.nodes)
    nodes[3] = nodes[3].detached()  # read from its objects between nodes read from rows
    frame = delivery_rows(nodes, MINUTE_MS)
    oracle = delivery_rows_one_by_one(_detached(snapshot), MINUTE_MS)
    assert frame.to_dicts() == oracle.to_dicts()


def test_port_rows_are_one_per_network_port_of_a_streaming_node() -> None:
    snapshot = _ticks()[-1]
    silent = replace(snapshot.nodes[1], status="unreachable")
    nodes = (snapshot.nodes[0], silent, *snapshot.nodes[2:])
    frame = port_rows(nodes, MINUTE_MS)
    expected = [
        (MINUTE_MS, node.name, _text(p.name), p.kind, _text(p.state), p.rate_gbps)
        for node in nodes
        if node.status == "streaming"
        for p in node.port_briefs
        if p.kind in ("ib", "roce", "efa")
    ]
    assert frame.to_dicts() == _rows_frame(expected, PORT_MINUTES).to_dicts()
    assert frame.height == 7 * 8  # the silent node's ports are left out; NICs are not ports


def test_duckdb_reads_the_written_rows(tmp_path: Path) -> None:
    snapshot = _ticks()[-1]
    path = tmp_path / "delivery.parquet"
    write_atomic(path, delivery_rows(snapshot.nodes, MINUTE_MS))
    oracle = tmp_path / "oracle.parquet"
    write_atomic(oracle, delivery_rows_one_by_one(_detached(snapshot), MINUTE_MS))
    query = "SELECT * FROM read_parquet(?) ORDER BY node, gpu"
    got = duckdb.execute(query, [str(path)]).fetchall()
    assert got == duckdb.execute(query, [str(oracle)]).fetchall()
    assert len(got) == 63
