"""start_metrics_endpoint wired to a fleet that publishes snapshots, as FleetRuntime does."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import replace

import pytest

from bench.lib.metrics_fleets import troubled_fleet
from exporter.endpoint import start_metrics_endpoint
from fleet.model import EventRecord, FleetSnapshot


class PublishingFleet:
    """The runtime's publishing side: latest(), subscribe() and ready, driven by the test."""

    def __init__(self) -> None:
        self.ready = False
        self._latest: FleetSnapshot | None = None
        self.listeners: list[Callable[[FleetSnapshot], None]] = []

    def latest(self) -> FleetSnapshot | None:
        return self._latest

    def subscribe(self, listener: Callable[[FleetSnapshot], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def publish(self, snapshot: FleetSnapshot) -> None:
        self._latest = snapshot
        for listener in tuple(self.listeners):
            listener(snapshot)


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as err:
        return int(err.code), ""


def _xid(snapshot: FleetSnapshot, at: float) -> FleetSnapshot:
    event = EventRecord(t=at, node="n2", kind="xid", gpu=3, code=79)
    return replace(snapshot, taken_at=at, new_events=(event,))


async def test_xids_published_between_scrapes_are_all_counted() -> None:
    fleet = PublishingFleet()
    server = await start_metrics_endpoint("127.0.0.1:0", fleet)
    try:
        url = f"{server.url}/metrics"
        status, body = await asyncio.to_thread(_get, url)
        assert status == 200 and "gpufleet_gpu_utilization_percent{" not in body  # no snapshot
        first = troubled_fleet()  # one XID 79, then one in each of two more ticks
        for snapshot in (first, _xid(first, first.taken_at + 1), _xid(first, first.taken_at + 2)):
            fleet.publish(snapshot)  # no scrape in between
        _, body = await asyncio.to_thread(_get, url)
        line = next(x for x in body.splitlines() if x.startswith("gpufleet_gpu_xid_errors_total{"))
        assert line.endswith(" 3") and 'xid="79"' in line
        assert (await asyncio.to_thread(_get, f"{server.url}/-/ready"))[0] == 503
        fleet.ready = True
        assert (await asyncio.to_thread(_get, f"{server.url}/-/ready"))[0] == 200
    finally:
        await server.stop()
    assert fleet.listeners == []  # stopping the endpoint unsubscribed its tally


async def test_a_bad_address_leaves_no_subscription() -> None:
    fleet = PublishingFleet()
    with pytest.raises(OSError):
        await start_metrics_endpoint("192.0.2.1:0", fleet)  # TEST-NET-1: not this host's
    assert fleet.listeners == []


async def test_raw_port_counters_reach_the_endpoint_only_when_asked() -> None:
    fleet = PublishingFleet()
    fleet.publish(troubled_fleet())
    bodies = []
    for raw in (False, True):
        server = await start_metrics_endpoint("127.0.0.1:0", fleet, raw_port_counters=raw)
        try:
            bodies.append((await asyncio.to_thread(_get, f"{server.url}/metrics"))[1])
        finally:
            await server.stop()
    assert "gpufleet_port_raw_value{" not in bodies[0]
    assert "gpufleet_port_raw_value{" in bodies[1]
