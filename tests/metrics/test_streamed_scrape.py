"""/metrics rendered on the event loop while it is sent (issue #11): the same bytes,
other tasks run between its parts, and a failure or an early close harms no later scrape."""

from __future__ import annotations

import asyncio
import gzip
import http.client
import itertools
import time
from collections.abc import Iterator

import pytest

from bench.lib.fleet_states import state_ticks
from bench.lib.metrics_fleets import without_scrape_duration
from exporter.server import MetricsServer
from exporter.streaming import SLICE_S
from exporter.text import NODES_PER_CHUNK, ExpositionRenderer
from fleet.model import FleetSnapshot
from tests.metrics.http_get import get_metrics


@pytest.fixture(scope="module")
def ticks() -> list[FleetSnapshot]:
    return state_ticks(NODES_PER_CHUNK + 3, 3)  # two chunks of nodes, three ticks


async def _http10(port: int) -> tuple[bytes, bytes]:
    """GET /metrics as HTTP/1.0: the body is whatever comes until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /metrics HTTP/1.0\r\nHost: test\r\n\r\n")
        head, _, body = (await reader.read(-1)).partition(b"\r\n\r\n")
        return head, body
    finally:
        writer.close()
        await writer.wait_closed()


async def test_a_streamed_scrape_is_the_rendered_body_chunked_gzipped_and_over_http10(
    ticks: list[FleetSnapshot],
) -> None:
    snapshot = ticks[-1]
    expected = ExpositionRenderer().render(snapshot)  # a first scrape: no duration line
    streams: list[int] = []

    def stream() -> Iterator[bytes]:
        streams.append(1)
        return ExpositionRenderer().stream_parts(snapshot)  # a first scrape per request

    server = MetricsServer("127.0.0.1:0", stream=stream)
    await server.start()
    try:
        port = server.bound_port
        status, headers, body = await asyncio.to_thread(get_metrics, port)
        assert (status, body) == (200, expected)
        assert headers["transfer-encoding"] == "chunked" and "content-length" not in headers
        status, headers, zipped = await asyncio.to_thread(get_metrics, port, Accept_Encoding="gzip")
        assert headers["content-encoding"] == "gzip"
        assert gzip.decompress(zipped) == expected
        head, body = await _http10(port)
        assert head.startswith(b"HTTP/1.1 200 OK") and b"chunked" not in head
        assert body == expected
        rendered = len(streams)
        status, headers, nothing = await asyncio.to_thread(get_metrics, port, "HEAD")
        assert (status, nothing) == (200, b"")
        assert len(streams) == rendered  # a HEAD renders nothing
    finally:
        await server.stop()


async def test_a_timer_that_comes_due_during_a_part_runs_before_the_next_part() -> None:
    ticker_ran = 0
    seen: list[int] = []

    async def ticker() -> None:  # a task woken by a timer, as the tick and keepalives are
        nonlocal ticker_ran
        while True:
            ticker_ran += 1
            await asyncio.sleep(SLICE_S / 10)  # the timer under test, not a wait

    def busy_parts() -> Iterator[bytes]:
        for _ in range(20):
            seen.append(ticker_ran)
            started = time.perf_counter()
            while time.perf_counter() - started < 2 * SLICE_S:  # a part's worth of rendering
                pass
            yield b"x 1\n"

    server = MetricsServer("127.0.0.1:0", stream=busy_parts)
    await server.start()
    task = asyncio.create_task(ticker())
    try:
        status, _, body = await asyncio.to_thread(get_metrics, server.bound_port)
    finally:
        task.cancel()
        await server.stop()
    assert (status, body) == (200, b"x 1\n" * 20)
    # Each part took longer than a slice and the ticker's timer came due meanwhile, so the
    # loop ran it before the next part (not only after the next slice).
    assert all(later > earlier for earlier, later in itertools.pairwise(seen))


async def test_a_render_failing_part_way_cuts_the_body_and_the_next_scrape_is_whole(
    ticks: list[FleetSnapshot],
) -> None:
    renderer = ExpositionRenderer()
    fail = ["later", "first"]

    def stream() -> Iterator[bytes]:
        parts = renderer.stream_parts(ticks[-1])
        how = fail.pop() if fail else None
        if how is None:
            return parts
        return _failing(parts, after=0 if how == "first" else 30)

    server = MetricsServer("127.0.0.1:0", stream=stream)
    await server.start()
    try:
        status, _, body = await asyncio.to_thread(get_metrics, server.bound_port)
        assert (status, body) == (500, b"rendering the metrics failed\n")
        with pytest.raises(http.client.IncompleteRead):
            await asyncio.to_thread(get_metrics, server.bound_port)
        status, _, body = await asyncio.to_thread(get_metrics, server.bound_port)
    finally:
        await server.stop()
    assert status == 200
    assert body.split(b"\n")[-3:] == ExpositionRenderer().render(ticks[-1]).split(b"\n")[-3:]
    assert b"gpufleet_gpu_power_watts{" in body


def _failing(parts: Iterator[bytes], after: int) -> Iterator[bytes]:
    for i, part in enumerate(parts):
        if i == after:
            raise ValueError("a rendering bug")
        yield part


async def test_two_scrapes_at_once_through_one_renderer_both_get_the_whole_body(
    ticks: list[FleetSnapshot],
) -> None:
    renderer = ExpositionRenderer()
    server = MetricsServer("127.0.0.1:0", stream=lambda: renderer.stream_parts(ticks[-1]))
    await server.start()
    try:
        answers = await asyncio.gather(
            asyncio.to_thread(get_metrics, server.bound_port),
            asyncio.to_thread(get_metrics, server.bound_port, Accept_Encoding="gzip"),
        )
    finally:
        await server.stop()
    plain, zipped = answers[0][2], gzip.decompress(answers[1][2])
    assert without_scrape_duration(plain) == without_scrape_duration(zipped)
    assert without_scrape_duration(plain) == without_scrape_duration(
        ExpositionRenderer().render(ticks[-1])
    )


def test_a_stream_closed_part_way_leaves_the_renderer_as_good_as_new(
    ticks: list[FleetSnapshot],
) -> None:
    renderer = ExpositionRenderer()
    renderer.render(ticks[0])
    parts = renderer.stream_parts(ticks[1])
    for _ in range(40):  # into the GPU families: blocks taken and begun
        next(parts)
    fresh = ExpositionRenderer()
    fresh.render(ticks[0])
    assert without_scrape_duration(renderer.render(ticks[2])) == without_scrape_duration(
        fresh.render(ticks[2])
    )
    with pytest.raises(RuntimeError):  # superseded: it would read the later render's caches
        next(parts)


def test_streamed_parts_are_the_rendered_parts_scrape_after_scrape(
    ticks: list[FleetSnapshot],
) -> None:
    streamed, whole = ExpositionRenderer(), ExpositionRenderer()
    for snapshot in ticks:
        assert without_scrape_duration(
            b"".join(streamed.stream_parts(snapshot))
        ) == without_scrape_duration(whole.render(snapshot))


async def test_a_streamed_scrape_gives_the_heap_back_once_its_body_is_rendered(
    ticks: list[FleetSnapshot],
) -> None:
    snapshot = ticks[-1]
    exhausted: list[bool] = []
    after: list[bool] = []
    called = asyncio.Event()

    def stream() -> Iterator[bytes]:
        exhausted.append(False)
        yield from ExpositionRenderer().stream_parts(snapshot)
        exhausted[-1] = True

    def after_stream() -> None:
        after.append(exhausted[-1])
        called.set()

    server = MetricsServer("127.0.0.1:0", stream=stream, after_stream=after_stream)
    await server.start()
    try:
        port = server.bound_port
        for encoding in ("identity", "gzip"):
            called.clear()
            status, _, _ = await asyncio.to_thread(get_metrics, port, Accept_Encoding=encoding)
            assert status == 200
            await asyncio.wait_for(called.wait(), 10)
        await asyncio.to_thread(get_metrics, port, "HEAD")  # renders nothing, frees nothing
        assert after == [True, True]
    finally:
        await server.stop()
