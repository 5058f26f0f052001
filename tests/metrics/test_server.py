"""The HTTP endpoint over real loopback connections."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Iterator

import pytest

from bench.lib.metrics_fleets import troubled_fleet
from exporter.addr import parse_addr
from exporter.server import MetricsServer
from exporter.text import ExpositionRenderer
from gpufleet.config.loader import parse_config
from tests.metrics.http_get import get_metrics

Response = tuple[int, dict[str, str], bytes]


async def request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, line: str, **headers: str
) -> Response:
    """Send one request on an open connection and read one response (Content-Length body)."""
    head = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
    writer.write(f"{line}\r\nHost: test\r\n{head}\r\n".encode())
    await writer.drain()
    status_line, *lines = (await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n")
    got = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines if h)}
    body = b"" if line.startswith("HEAD") else await reader.readexactly(int(got["content-length"]))
    return int(status_line.split(" ")[1]), got, body


async def fetch(server: MetricsServer, line: str, **headers: str) -> Response:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
    try:
        return await request(reader, writer, line, Connection="close", **headers)
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.fixture
async def served() -> AsyncIterator[tuple[MetricsServer, list[bool]]]:
    ready = [False]
    renderer = ExpositionRenderer()
    snapshot = troubled_fleet()
    server = MetricsServer(
        "127.0.0.1:0", stream=lambda: renderer.stream_parts(snapshot), ready=lambda: ready[0]
    )
    await server.start()
    yield server, ready
    await server.stop()


async def test_metrics_plain_and_gzip(served: tuple[MetricsServer, list[bool]]) -> None:
    server, _ = served
    status, headers, body = await asyncio.to_thread(get_metrics, server.bound_port)
    assert status == 200
    assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert b'gpufleet_node_broken{node="n2"} 1\n' in body
    status, headers, zipped = await asyncio.to_thread(
        get_metrics, server.bound_port, Accept_Encoding="gzip"
    )
    assert headers["content-encoding"] == "gzip"
    assert len(zipped) < len(body)
    unzipped = gzip.decompress(zipped)
    # Only the previous scrape's duration differs between the two bodies.
    assert _without_duration(unzipped) == _without_duration(body)


def _without_duration(body: bytes) -> list[bytes]:
    return [line for line in body.splitlines() if not line.startswith(b"gpufleet_scrape_")]


async def test_ready_follows_the_fleet_and_healthy_always(
    served: tuple[MetricsServer, list[bool]],
) -> None:
    server, ready = served
    assert (await fetch(server, "GET /-/ready HTTP/1.1"))[0] == 503
    assert (await fetch(server, "GET /-/healthy HTTP/1.1"))[0] == 200
    ready[0] = True
    assert (await fetch(server, "GET /-/ready HTTP/1.1"))[0] == 200


async def test_unknown_paths_methods_and_head(served: tuple[MetricsServer, list[bool]]) -> None:
    server, _ = served
    assert (await fetch(server, "GET /nope HTTP/1.1"))[0] == 404
    status, headers, _ = await fetch(server, "POST /metrics HTTP/1.1")
    assert (status, headers["allow"]) == (405, "GET, HEAD")
    # HEAD renders nothing: a streamed body's length is not known before it is rendered.
    status, headers, body = await asyncio.to_thread(get_metrics, server.bound_port, "HEAD")
    assert (status, body) == (200, b"")
    assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "content-length" not in headers


async def test_keep_alive_then_stop_closes_the_idle_connection(
    served: tuple[MetricsServer, list[bool]],
) -> None:
    server, _ = served
    port = server.bound_port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for _ in range(2):  # two requests on one connection, as Prometheus does
        assert (await request(reader, writer, "GET /-/healthy HTTP/1.1"))[0] == 200
    await server.stop()
    assert await asyncio.wait_for(reader.read(), timeout=5) == b""  # closed by the server
    writer.close()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)  # no longer listening


async def test_render_failure_answers_500_and_keeps_serving() -> None:
    def broken() -> Iterator[bytes]:
        raise RuntimeError("bug")
        yield b""  # a generator: the bug shows when the first part is asked for

    server = MetricsServer("127.0.0.1:0", stream=broken)
    await server.start()
    try:
        assert (await fetch(server, "GET /metrics HTTP/1.1"))[0] == 500
        assert (await fetch(server, "GET /-/healthy HTTP/1.1"))[0] == 200
    finally:
        await server.stop()


async def test_binds_loopback_unless_told_otherwise() -> None:
    def nothing() -> Iterator[bytes]:
        return iter(())

    assert MetricsServer(stream=nothing).host == "127.0.0.1"
    assert MetricsServer(stream=nothing).port == 9400
    assert parse_config({}).metrics.addr == "127.0.0.1:9400"
    server = MetricsServer("127.0.0.1:0", stream=nothing)
    await server.start()
    try:
        assert server.url == f"http://127.0.0.1:{server.bound_port}"
    finally:
        await server.stop()


@pytest.mark.parametrize("addr", ["9400", ":9400", "host:port", "h:70000"])
def test_bad_addresses_are_refused(addr: str) -> None:
    with pytest.raises(ValueError, match=r"9400|port"):
        parse_addr(addr)


async def test_oversized_and_malformed_requests_are_answered_and_closed(
    served: tuple[MetricsServer, list[bool]],
) -> None:
    server, _ = served
    for raw, status in (
        (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20_000, 431),
        (b"hello\r\n\r\n", 400),
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
        writer.write(raw)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), timeout=5)  # EOF: the server closed
        assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer[:80]
        writer.close()
