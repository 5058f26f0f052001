"""The attached SLA header: shards' ledgers over the bus, judged as `gpufleet sla` judges."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import nats.errors
import pytest

from cluster.chunked import ChunkError, ChunkStore, fetch_chunked
from cluster.fleet_sla import (
    FleetSla,
    IntervalRow,
    LedgerRequest,
    ShardLedger,
    decode_ledger,
    ledger_request,
    shard_ledger,
)
from cluster.history import history_root, shard_dirs
from cluster.shards import ShardSpec
from cluster.wire import encode
from gpufleet.config import parse_config
from gpufleet.shard import shard_data_dir
from history.ledger import LedgerInputs, load_ledger
from history.states import StateInterval
from ledger.sla.period import month_period
from ledger.sla.section import SlaSection
from ledger.sla.summary import sla_summary
from tests.cluster.recorded import T0, fleet_ticks, record


def store_asker(stores: dict[str, ChunkStore], replies: dict[str, bytes]):  # type: ignore[no-untyped-def]
    """A round trip served by chunk stores, as a shard's subscriptions serve it."""

    async def ask(subject: str, payload: bytes) -> bytes:
        if subject.endswith(".chunk"):
            return stores[subject].take(payload)
        return stores[subject.replace(".ledger", ".chunk")].first(replies[subject])

    return ask


async def test_a_reply_larger_than_a_message_comes_back_whole() -> None:
    data = bytes(range(256)) * 1000  # 256,000 bytes: 4 chunks of 64 KiB
    store = ChunkStore(chunk_bytes=65_536)
    ask = store_asker({"s.chunk": store}, {"s.ledger": data})
    assert await fetch_chunked(ask, "s.ledger", "s.chunk", b"") == data
    assert store.pending == 0  # read to the end: nothing kept
    empty = store_asker({"s.chunk": store}, {"s.ledger": b""})
    assert await fetch_chunked(empty, "s.ledger", "s.chunk", b"") == b""


async def test_a_chunk_the_shard_no_longer_holds_is_an_error_not_a_short_reply() -> None:
    now = [0.0]
    store = ChunkStore(chunk_bytes=10, clock=lambda: now[0])

    async def slow(subject: str, payload: bytes) -> bytes:
        if subject == "ask":
            reply = store.first(b"x" * 25)
            now[0] += 1000.0  # the asker comes back for the rest long after
            return reply
        return store.take(payload)

    with pytest.raises(ChunkError, match="no longer holds"):
        await fetch_chunked(slow, "ask", "chunk", b"")
    assert store.pending == 0  # expired, not kept forever

    async def garbage(subject: str, payload: bytes) -> bytes:
        return b"\xc1 not msgpack"

    with pytest.raises(ChunkError, match="malformed"):
        await fetch_chunked(garbage, "ask", "chunk", b"")


def contract() -> SlaSection:
    sla = parse_config({"sla": {"committed_nodes": 6, "gpu_hour_price": 2, "grace_minutes": 1}}).sla
    assert sla is not None
    return sla


def test_the_viewers_sla_equals_gpufleet_sla_over_the_shards_directories(tmp_path: Path) -> None:
    ticks = fleet_ticks(nodes=6, seconds=660)
    for k in (1, 2, 3):
        spec = ShardSpec(k, 3)
        shard_dir = shard_data_dir(tmp_path, spec)
        if k != 2:
            record(shard_dir, ticks, spec)
        else:  # shard 2 stopped for a while: only its nodes go unmonitored
            record(shard_dir, ticks[:200], spec)
            record(shard_dir, ticks[400:], spec)
    now = T0 + 700
    period = month_period("2026-10")
    asked = LedgerRequest(period.start_ms, period.month_end_ms)
    viewer = FleetSla()
    for k, shard_dir in enumerate(shard_dirs(tmp_path), start=1):
        inputs = load_ledger(shard_dir, period.first_day, period.last_day, now)
        sent = encode(shard_ledger(k, inputs, contract() if k == 1 else None, asked))
        viewer.take(decode_ledger(sent))
    with history_root(tmp_path) as root:
        want = sla_summary(root, contract(), now)
    got = viewer.summary(now)
    assert got == want
    assert got is not None and got.availability_pct is not None
    assert got.availability_pct < 100 and got.coverage_pct < 100


def test_no_contract_no_header_and_a_ledger_for_another_month_is_clipped() -> None:
    viewer = FleetSla()
    assert viewer.summary(time.time()) is None
    asked = ledger_request(T0)
    assert (asked.start_ms, asked.end_ms) == (
        month_period("2026-10").start_ms,
        month_period("2026-10").month_end_ms,
    )
    before = asked.start_ms - 10_000
    inputs = LedgerInputs(
        [(before - 5000, before), (before, asked.start_ms + 5000)],
        [
            StateInterval("n1", "up", before - 5000, before),
            StateInterval("n1", "broken", before, None),
        ],
    )
    ledger = shard_ledger(3, inputs, None, asked)
    assert [(r.state, r.end_ms) for r in ledger.intervals] == [("broken", None)]
    assert ledger.coverage == ((before, asked.start_ms + 5000),)
    viewer.take(ledger)
    assert viewer.summary(T0) is None  # no shard sent a contract


def test_a_ledger_with_a_bad_contract_or_state_is_refused_or_ignored() -> None:
    period = month_period("2026-10")
    asked = LedgerRequest(period.start_ms, period.month_end_ms)
    ledger = shard_ledger(1, LedgerInputs([], []), contract(), asked)
    hostile = msgspec.msgpack.encode([1, None, [], [["n1", "sideways", 0, None, []]], True])
    with pytest.raises(msgspec.ValidationError):
        decode_ledger(hostile)
    viewer = FleetSla()
    viewer.take(msgspec.structs.replace(ledger, contract='{"committed_nodes": -4}'))
    assert viewer.contract() is None


async def test_a_shard_that_stops_answering_keeps_its_last_ledger_not_live(
    tmp_path: Path,
) -> None:
    ticks = fleet_ticks(nodes=6, seconds=200)
    for k in (1, 2, 3):
        record(shard_data_dir(tmp_path, ShardSpec(k, 3)), ticks, ShardSpec(k, 3))
    now = T0 + 200
    period = month_period("2026-10")
    stores = {k: ChunkStore() for k in (1, 2, 3)}
    gone: set[int] = set()

    async def ask(subject: str, payload: bytes) -> bytes:
        k = int(subject.split(".")[2])
        if k in gone:
            raise nats.errors.NoRespondersError
        if subject.endswith(".chunk"):
            return stores[k].take(payload)
        asked = msgspec.msgpack.decode(payload, type=LedgerRequest)
        inputs = load_ledger(shard_data_dir(tmp_path, ShardSpec(k, 3)), period.first_day,
                             period.last_day, now)  # fmt: skip
        inputs = LedgerInputs(inputs.coverage, inputs.intervals, live=True)
        return stores[k].first(encode(shard_ledger(k, inputs, contract(), asked)))

    viewer = FleetSla()
    first = await viewer.refresh(ask, [1, 2, 3], now)
    assert first is not None and viewer.inputs().live
    gone.add(2)
    second = await viewer.refresh(ask, [1, 3], now)  # shard 2 no longer summarizes either
    assert set(viewer.ledgers) == {1, 2, 3}  # asked all the same, its last ledger kept
    assert second is not None and not viewer.inputs().live


@pytest.mark.parametrize("seen", [(), ("node-001", "unmonitored"), ("node-001", "up")])
def test_the_first_figure_of_shards_just_started_is_not_measured_never_zero(
    seen: tuple[str, ...],
) -> None:
    """Shards recorded one second, nodes still connecting (or one up): a collector's
    first figure would be "not measured"; so is the viewer's, until a refresh of
    coverage. Before, the committed slots never seen counted as down: 0 % (and 10 %)."""
    start = ledger_request(T0).start_ms + 86_400_000
    rows = () if not seen else (IntervalRow(seen[0], seen[1], start, None),)  # type: ignore[arg-type]
    terms = contract().model_dump_json()
    viewer = FleetSla()
    viewer.count = 1
    viewer.take(ShardLedger(1, terms, ((start, start + 1000),), rows, True), start / 1000 + 1)
    first = viewer.summary(start / 1000 + 1)
    assert first is not None and first.availability_pct is None
    assert first.reading.startswith("not measured yet")
    # A refresh later (30 s monitored), the month is judged.
    later = ShardLedger(1, terms, ((start, start + 31_000),), rows, True)
    viewer.take(later, start / 1000 + 31)
    judged = viewer.summary(start / 1000 + 31)
    assert judged is not None and judged.availability_pct is not None


def test_a_viewer_told_a_shorter_first_figure_threshold_judges_after_it() -> None:
    """``first_figure_ms`` (the attached viewer's ``sla_first_figure_s``) moves the point
    where the month gets a figure; below it the figure is still "not measured"."""
    start = ledger_request(T0).start_ms + 86_400_000
    rows = (IntervalRow("node-001", "up", start, None),)
    terms = contract().model_dump_json()
    viewer = FleetSla(first_figure_ms=3000)
    viewer.count = 1
    viewer.take(ShardLedger(1, terms, ((start, start + 2000),), rows, True), start / 1000 + 2)
    early = viewer.summary(start / 1000 + 2)
    assert early is not None and early.availability_pct is None
    viewer.take(ShardLedger(1, terms, ((start, start + 3000),), rows, True), start / 1000 + 3)
    judged = viewer.summary(start / 1000 + 3)
    assert judged is not None and judged.availability_pct is not None
