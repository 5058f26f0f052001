"""Wiring a running fleet to a metrics endpoint: what ``serve``, ``watch`` and ``demo`` call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

from exporter.dcgm import DcgmExposition
from exporter.dcgm_sd import DCGM_PATH, SD_PATH, node_from_path, sd_targets
from exporter.server import MetricsServer, Page, Router
from exporter.text import CONTENT_TYPE, ExpositionRenderer
from exporter.web_config import WebConfig
from exporter.xids import XidTally
from fleet.model import FleetSnapshot

SD_CONTENT_TYPE = "application/json"


class ExposedFleet(Protocol):
    """What the endpoint needs of a fleet (``gpufleet.runtime.FleetRuntime`` has it)."""

    @property
    def ready(self) -> bool:
        """True once every node has been tried."""
        ...

    def latest(self) -> FleetSnapshot | None:
        """The newest snapshot, or None before the first tick."""
        ...

    def subscribe(self, listener: Callable[[FleetSnapshot], None]) -> Callable[[], None]:
        """Call ``listener`` with every snapshot; returns the unsubscribe function."""
        ...


@runtime_checkable
class LedgerFamilies(Protocol):
    """A fleet that keeps month-to-date ledger figures (repairs, delivery) computed off
    its tick; their families end each ``/metrics`` scrape as it last rendered them."""

    def ledger_families(self) -> str:
        """The exposition text of the ledger families ("" before the first refresh)."""
        ...


def scrape_parts(renderer: ExpositionRenderer, runtime: ExposedFleet) -> Iterator[bytes]:
    """``/metrics``: the snapshot's families, then the ledgers' (already rendered text)."""
    yield from renderer.stream_parts(runtime.latest())
    if isinstance(runtime, LedgerFamilies):
        text = runtime.ledger_families()
        if text:
            yield text.encode("utf-8")


def scrape_tick(runtime: ExposedFleet) -> tuple[object, ...]:
    """What ``/metrics`` shows now: the snapshot and the ledgers' text (both replaced, never
    changed, when they move), so scrapes of the same pair share one rendering."""
    ledgers = runtime.ledger_families() if isinstance(runtime, LedgerFamilies) else None
    return runtime.latest(), ledgers


def dcgm_routes(runtime: ExposedFleet, xids: XidTally) -> Router:
    """``/metrics/dcgm``, ``/metrics/dcgm/<node>`` and ``/sd`` for ``runtime``'s fleet."""
    dcgm = DcgmExposition(xids)

    def answer(path: str, host: str) -> Page | None:
        if path == SD_PATH:
            return 200, sd_targets(runtime.latest(), host), SD_CONTENT_TYPE
        if path == DCGM_PATH:
            body = dcgm.render(runtime.latest())
        else:
            node = node_from_path(path)
            body = None if node is None else dcgm.render(runtime.latest(), node)
        return None if body is None else (200, body, CONTENT_TYPE)

    return answer


async def start_metrics_endpoint(
    addr: str,
    runtime: ExposedFleet,
    *,
    gzip: bool = True,
    web: WebConfig | None = None,
    raw_port_counters: bool = False,
) -> MetricsServer:
    """Serve ``runtime``'s latest snapshot on ``addr`` until the returned server is stopped.

    ``/metrics`` has the ``gpufleet_*`` families; ``/metrics/dcgm`` the same GPUs in
    dcgm-exporter's shape, ``/metrics/dcgm/<node>`` one node of it, and ``/sd`` lists
    those per-node paths for Prometheus' HTTP service discovery. The XID tally is
    subscribed to every snapshot, so XIDs between two scrapes are counted; stopping
    the server unsubscribes it. Scrapes of one tick share its rendering, and a new tick
    drops the last one's bodies. ``web`` adds TLS and basic auth (``web.yml``);
    ``raw_port_counters`` adds ``gpufleet_port_raw_value`` (``[metrics]``). A fleet with
    :class:`LedgerFamilies` ends the body with its ledger families.

    Raises:
        OSError: the address cannot be listened on (taken, or not an address of this host).
        ValueError: ``addr`` is not ``host:port``.
    """
    xids = XidTally()
    server: MetricsServer | None = None

    def observe(snapshot: FleetSnapshot) -> None:
        xids.observe(snapshot)
        if server is not None:
            server.bodies.forget()  # the last tick's bodies are not sent again: free them

    unsubscribe = runtime.subscribe(observe)
    renderer = ExpositionRenderer(xids=xids, raw_port_counters=raw_port_counters)
    server = MetricsServer(
        addr,
        stream=lambda: scrape_parts(renderer, runtime),
        tick=lambda: scrape_tick(runtime),
        ready=lambda: bool(runtime.ready),
        gzip=gzip,
        on_stop=(unsubscribe,),
        routes=dcgm_routes(runtime, xids),
        web=web,
    )
    try:
        await server.start()
    except BaseException:
        unsubscribe()
        raise
    return server
