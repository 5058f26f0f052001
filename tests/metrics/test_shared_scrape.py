"""Scrapes of one tick share one rendering per encoding, over real HTTP clients.

Twenty aiohttp clients scrape the endpoint at once: every gzip body is the same bytes,
every plain body too, the two agree, and the server rendered each encoding once for the
tick. A later tick renders again, and the earlier tick's bodies are not kept.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator

import aiohttp
import pytest

from bench.lib.fleet_states import state_ticks
from bench.lib.metrics_fleets import without_scrape_duration
from exporter.endpoint import start_metrics_endpoint
from exporter.server import MetricsServer
from exporter.streaming import FLUSH_BYTES
from exporter.text import NODES_PER_CHUNK, ExpositionRenderer
from fleet.model import FleetSnapshot
from tests.metrics.test_endpoint import PublishingFleet
from tests.metrics.test_promtool import promtool_findings

CLIENTS = 20


@pytest.fixture(scope="module")
def ticks() -> list[FleetSnapshot]:
    return state_ticks(NODES_PER_CHUNK + 3, 2)  # two chunks of nodes, two ticks


async def _scrape(session: aiohttp.ClientSession, url: str, encoding: str) -> bytes:
    headers = {"Accept-Encoding": encoding}
    async with session.get(url, headers=headers, auto_decompress=False) as response:
        assert response.status == 200
        assert (response.headers.get("Content-Encoding") == "gzip") == (encoding == "gzip")
        return await response.read()


async def _scrape_at_once(url: str) -> tuple[set[bytes], set[bytes]]:
    """CLIENTS scrapes at once, half asking for gzip: the distinct bodies of each kind."""
    encodings = ["gzip", "identity"] * (CLIENTS // 2)
    connector = aiohttp.TCPConnector(limit=CLIENTS, force_close=True)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:
        bodies = await asyncio.gather(*(_scrape(session, url, e) for e in encodings))
    zipped = {b for b, e in zip(bodies, encodings, strict=True) if e == "gzip"}
    plain = {b for b, e in zip(bodies, encodings, strict=True) if e == "identity"}
    return zipped, plain


async def test_twenty_scrapes_of_one_tick_share_one_rendering_per_encoding(
    ticks: list[FleetSnapshot],
) -> None:
    fleet = PublishingFleet()
    fleet.publish(ticks[0])
    server = await start_metrics_endpoint("127.0.0.1:0", fleet)
    try:
        url = f"{server.url}/metrics"
        zipped, plain = await _scrape_at_once(url)
        assert len(zipped) == len(plain) == 1  # byte-identical within each encoding
        first = plain.pop()
        # The second rendering carries the first one's duration: the rest is the same.
        assert without_scrape_duration(gzip.decompress(zipped.pop())) == without_scrape_duration(
            first
        )
        assert server.bodies.renders == {"gzip": 1, "identity": 1}
        assert server.bodies.joined == CLIENTS - 2
        assert without_scrape_duration(first) == without_scrape_duration(
            ExpositionRenderer().render(ticks[0])
        )
        assert server.bodies.kept == 2
        fleet.publish(ticks[1])  # a new tick: the last one's bodies are let go
        assert server.bodies.kept == 0
        zipped, plain = await _scrape_at_once(url)
        assert len(zipped) == len(plain) == 1
        second = plain.pop()
        assert without_scrape_duration(gzip.decompress(zipped.pop())) == without_scrape_duration(
            second
        )
        assert without_scrape_duration(second) != without_scrape_duration(first)
        assert server.bodies.renders == {"gzip": 2, "identity": 2}
        assert server.bodies.kept == 2
    finally:
        await server.stop()
    assert promtool_findings(second) == []


async def test_a_scrape_arriving_mid_render_joins_it_and_the_first_is_streamed(
    ticks: list[FleetSnapshot],
) -> None:
    snapshot = ticks[-1]
    renderer = ExpositionRenderer()
    expected = b"".join(ExpositionRenderer().stream_parts(snapshot))
    first_bytes = asyncio.Event()  # the first scraper has read part of its body
    later: list[asyncio.Task[bytes]] = []
    server: MetricsServer | None = None

    def stream() -> Iterator[bytes]:
        assert server is not None
        parts = renderer.stream_parts(snapshot)
        rendered = 0
        for part in parts:  # past one HTTP chunk's worth: the first scraper is sent one
            rendered += len(part)
            yield part
            if rendered > FLUSH_BYTES:
                break
        later.append(asyncio.get_running_loop().create_task(_one_scrape(server)))
        # Rendering goes on, in slices that hand the loop over, until the first scraper
        # has bytes of its body and the second scrape has joined this rendering.
        while not (first_bytes.is_set() and server.bodies.joined == 1):
            yield b""
        yield from parts

    server = MetricsServer("127.0.0.1:0", stream=stream, tick=lambda: (snapshot,))
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        size_line = await reader.readuntil(b"\r\n")  # the first chunk, before the end
        first_bytes.set()
        rest = await reader.read(-1)
        writer.close()
        await writer.wait_closed()
        second = await later[0]
    finally:
        await server.stop()
    assert head.startswith(b"HTTP/1.1 200 OK") and int(size_line, 16) > 0
    assert _unchunked(size_line + rest) == expected == second
    assert server.bodies.renders == {"gzip": 0, "identity": 1}


async def _one_scrape(server: MetricsServer) -> bytes:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{server.url}/metrics", headers={"Accept-Encoding": "identity"}) as got,
    ):
        return await got.read()


def _unchunked(data: bytes) -> bytes:
    """The body of an HTTP/1.1 chunked transfer, from its first size line."""
    body: list[bytes] = []
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return b"".join(body)
        body.append(data[:size])
        data = data[size + 2 :]


async def test_a_render_that_cannot_start_answers_500_and_the_next_tick_renders(
    ticks: list[FleetSnapshot],
) -> None:
    shown = [ticks[0]]
    calls: list[int] = []

    def stream() -> Iterator[bytes]:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("a rendering bug before the first part")
        return ExpositionRenderer().stream_parts(shown[0])

    server = MetricsServer("127.0.0.1:0", stream=stream, tick=lambda: (shown[0],))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            plain = {"Accept-Encoding": "identity"}
            async with session.get(f"{server.url}/metrics", headers=plain) as failed:
                assert failed.status == 500
            # The failed body is not kept: the same tick is rendered again, and shared.
            bodies = await asyncio.gather(*(_one_scrape(server) for _ in range(3)))
    finally:
        await server.stop()
    assert len(set(bodies)) == 1 and b"gpufleet_gpu_power_watts{" in bodies[0]
    assert server.bodies.renders["identity"] == 2
