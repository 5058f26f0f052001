"""/metrics written part by part: a real HTTP client reads the body a single join gives."""

from __future__ import annotations

import asyncio
import gzip

from bench.fleet_states import state_ticks
from fleet.metrics.server import MetricsServer
from fleet.metrics.text import NODES_PER_CHUNK, ExpositionRenderer
from tests.metrics.http_get import get_metrics


async def test_a_body_in_parts_arrives_whole_plain_gzipped_and_as_head() -> None:
    snapshot = state_ticks(NODES_PER_CHUNK + 3, 2)[-1]  # two chunks of nodes: many parts
    expected = ExpositionRenderer().render(snapshot)  # a first scrape, joined
    renderers = [ExpositionRenderer() for _ in range(3)]  # one first scrape per request
    parts_served: list[int] = []

    def render() -> list[bytes]:
        parts = renderers[len(parts_served)].render_parts(snapshot)
        parts_served.append(len(parts))
        return parts

    server = MetricsServer("127.0.0.1:0", render=render)
    await server.start()
    try:
        port = server.bound_port
        status, headers, body = await asyncio.to_thread(get_metrics, port)
        assert status == 200 and body == expected
        assert headers["content-length"] == str(len(expected))
        assert "transfer-encoding" not in headers
        status, headers, zipped = await asyncio.to_thread(get_metrics, port, Accept_Encoding="gzip")
        assert headers["content-encoding"] == "gzip"
        assert gzip.decompress(zipped) == expected
        status, headers, nothing = await asyncio.to_thread(get_metrics, port, "HEAD")
        assert status == 200 and nothing == b""
        assert headers["content-length"] == str(len(expected))
    finally:
        await server.stop()
    assert len(parts_served) == 3 and min(parts_served) > 100  # really sent in parts


def test_the_parts_are_the_body_in_order() -> None:
    snapshot = state_ticks(NODES_PER_CHUNK + 3, 2)[-1]
    parts = ExpositionRenderer().render_parts(snapshot)
    assert all(parts)  # no empty part is written
    assert b"".join(parts) == ExpositionRenderer().render(snapshot)
