"""Guessing the /metrics password is rate limited per client, a known-good password
still passes, and connections beyond the cap are turned away (counts, not timings)."""

from __future__ import annotations

import asyncio
import base64
import urllib.error
import urllib.request
from collections import Counter

import bcrypt

from bench.lib.metrics_fleets import troubled_fleet
from exporter.endpoint import start_metrics_endpoint
from exporter.server import MetricsServer
from exporter.web_config import FAILURES_BURST, WebConfig
from tests.metrics.test_endpoint import PublishingFleet

USER, PASSWORD = "prometheus", "s3cret pass"


def _get(url: str, password: str | None) -> int:
    request = urllib.request.Request(url)
    if password is not None:
        token = base64.b64encode(f"{USER}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def _web() -> WebConfig:
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4))
    return WebConfig(users={USER: hashed}, clock=lambda: 1000.0)  # time stands still


async def test_a_wrong_password_flood_runs_bcrypt_only_for_the_burst() -> None:
    web = _web()
    fleet = PublishingFleet()
    fleet.publish(troubled_fleet())
    server = await start_metrics_endpoint("127.0.0.1:0", fleet, web=web)
    url = f"{server.url}/-/healthy"
    try:
        assert await asyncio.to_thread(_get, url, PASSWORD) == 200  # verified once, cached
        statuses = Counter([await asyncio.to_thread(_get, url, f"guess-{i}") for i in range(40)])
        still = await asyncio.to_thread(_get, url, PASSWORD)
    finally:
        await server.stop()
    assert statuses == {401: FAILURES_BURST, 429: 40 - FAILURES_BURST}
    assert web.bcrypt_checks == 1 + FAILURES_BURST  # the good password once, then the burst
    assert web.throttled == 40 - FAILURES_BURST
    assert still == 200  # the scraper's cached password is not locked out by the guesser


def test_failed_logins_are_allowed_again_as_time_passes() -> None:
    now = [0.0]
    web = WebConfig(
        users={USER: bcrypt.hashpw(b"x", bcrypt.gensalt(rounds=4))}, clock=lambda: now[0]
    )
    wrong = "Basic " + base64.b64encode(f"{USER}:nope".encode()).decode()
    verdicts = [web.check(wrong, "10.0.0.1") for _ in range(FAILURES_BURST + 1)]
    assert verdicts == ["denied"] * FAILURES_BURST + ["throttled"]
    assert web.check(wrong, "10.0.0.2") == "denied"  # per client
    now[0] = 2.0  # one refill period later: one more try
    assert [web.check(wrong, "10.0.0.1") for _ in range(2)] == ["denied", "throttled"]


async def _open_idle(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A keep-alive connection that has had one answer (so the server holds it)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    await reader.readuntil(b"healthy\n")
    return reader, writer


async def test_connections_beyond_the_cap_are_answered_503() -> None:
    async def stream() -> object:
        raise AssertionError("no scrape in this test")

    server = MetricsServer("127.0.0.1:0", stream=stream, max_connections=2)  # type: ignore[arg-type]
    await server.start()
    held = [await _open_idle(server.bound_port) for _ in range(2)]
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
        answer = await reader.read()
        writer.close()
    finally:
        for _, w in held:
            w.close()
        await server.stop()
    assert answer.startswith(b"HTTP/1.1 503 ")
    assert server.refused_connections == 1
