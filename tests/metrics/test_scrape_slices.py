"""A scrape that falls behind on a busy loop gets longer slices, and still hands the loop
over after each (issue #11). Time here is a fake clock the parts and the other work
advance, so the test counts turns, it does not time anything."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator

import pytest

from exporter.streaming import (
    SLICE_GRACE_S,
    SLICE_MAX_S,
    SLICE_S,
    send_parts,
    slice_length,
)

PART_S = 0.001  # each part is a millisecond of rendering on the fake clock
OTHER_WORK_S = 0.1  # each turn of the other work (ingest, the tick) takes this long


class FakeTime:
    """The fake clock: advanced by the parts (rendering) and by the other task (its work)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def writer() -> AsyncIterator[asyncio.StreamWriter]:
    """A writer to a real loopback connection whose far end reads everything."""
    received = asyncio.Event()

    async def drain(reader: asyncio.StreamReader, _: asyncio.StreamWriter) -> None:
        await reader.read(-1)
        received.set()

    server = await asyncio.start_server(drain, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _, client = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield client
    finally:
        client.close()
        await client.wait_closed()
        await asyncio.wait_for(received.wait(), 10)
        server.close()
        await server.wait_closed()


def _parts(clock: FakeTime, count: int) -> Iterator[bytes]:
    for _ in range(count):
        clock.now += PART_S
        yield b"x 1\n"


async def _scrape_beside_busy_work(
    writer: asyncio.StreamWriter, parts: int
) -> tuple[list[float], float]:
    """Send ``parts`` parts while another task does OTHER_WORK_S of work per turn; the
    fake times at which the other task got its turns, and when the scrape ended."""
    clock = FakeTime()
    turns: list[float] = []
    done = False

    async def other_work() -> None:
        while not done:
            turns.append(clock.now)
            clock.now += OTHER_WORK_S
            await asyncio.sleep(0)

    task = asyncio.create_task(other_work())
    await asyncio.sleep(0)  # it has taken its first turn
    began = clock.now
    await send_parts(
        writer,
        b"",
        _parts(clock, parts),
        began=began,
        compressor=None,
        chunked=True,
        clock=clock,
    )
    ended = clock.now - began
    done = True
    await task
    return turns, ended


def test_a_slice_grows_with_the_scrape_s_age_up_to_its_cap() -> None:
    assert slice_length(0.0) == slice_length(SLICE_GRACE_S) == SLICE_S  # a young scrape
    lengths = [slice_length(age / 10) for age in range(200)]
    assert all(b >= a for a, b in itertools.pairwise(lengths))
    assert lengths[-1] == SLICE_MAX_S


async def test_a_scrape_on_a_busy_loop_ends_inside_the_scrape_timeout(
    writer: asyncio.StreamWriter,
) -> None:
    # Half a second of rendering (a 3,000-node scrape) beside other work of 100 ms per
    # turn: with 4 ms slices throughout it would take over 0.5 / 0.004 * 0.1 = 12.5 s,
    # past Prometheus' 10 s timeout. Slices grow to 20 ms, not more: longer ones starved
    # ingest at 3,000 nodes (BENCHMARKS.md).
    _, ended = await _scrape_beside_busy_work(writer, int(0.5 / PART_S))
    assert ended < 10.0


async def test_a_scrape_that_falls_behind_still_hands_the_loop_over_after_each_slice(
    writer: asyncio.StreamWriter,
) -> None:
    turns, _ = await _scrape_beside_busy_work(writer, int(3.0 / PART_S))
    # Rendering between two turns of the other work: at most one slice (and one part).
    rendering = [b - a - OTHER_WORK_S for a, b in itertools.pairwise(turns)]
    assert len(rendering) > 3.0 / SLICE_MAX_S
    assert max(rendering) <= SLICE_MAX_S + PART_S + 1e-9
    # At first the slices are short; they grow as the scrape ages.
    assert rendering[0] <= SLICE_S + PART_S + 1e-9
    assert rendering[-2] >= SLICE_MAX_S > 4 * rendering[0]
