"""Wiring a running fleet to a metrics endpoint: what ``serve``, ``watch`` and ``demo`` call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

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
    addr: str, runtime: ExposedFleet, *, gzip: bool = True, web: WebConfig | None = None
) -> MetricsServer:
    """Serve ``runtime``'s latest snapshot on ``addr`` until the returned server is stopped.

    ``/metrics`` has the ``gpufleet_*`` families; ``/metrics/dcgm`` the same GPUs in
    dcgm-exporter's shape, ``/metrics/dcgm/<node>`` one node of it, and ``/sd`` lists
    those per-node paths for Prometheus' HTTP service discovery. The XID tally is
    subscribed to every snapshot, so XIDs between two scrapes are counted; stopping
    the server unsubscribes it. ``web`` adds TLS and basic auth (``web.yml``).

    Raises:
        OSError: the address cannot be listened on (taken, or not an address of this host).
        ValueError: ``addr`` is not ``host:port``.
    """
    xids = XidTally()
    unsubscribe = runtime.subscribe(xids.observe)
    renderer = ExpositionRenderer(xids=xids)
    server = MetricsServer(
        addr,
        stream=lambda: renderer.stream_parts(runtime.latest()),
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
