"""Wiring a running fleet to a metrics endpoint: what ``serve``, ``watch`` and ``demo`` call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fleet.metrics.server import MetricsServer
from fleet.metrics.text import ExpositionRenderer
from fleet.metrics.xids import XidTally
from fleet.model import FleetSnapshot


class ExposedFleet(Protocol):
    """What the endpoint needs of a fleet (``fleet.runtime.FleetRuntime`` has it)."""

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


async def start_metrics_endpoint(
    addr: str, runtime: ExposedFleet, *, gzip: bool = True
) -> MetricsServer:
    """Serve ``runtime``'s latest snapshot on ``addr`` until the returned server is stopped.

    The XID tally is subscribed to every snapshot, so XIDs between two scrapes are
    counted; stopping the server unsubscribes it.

    Raises:
        OSError: the address cannot be listened on (taken, or not an address of this host).
        ValueError: ``addr`` is not ``host:port``.
    """
    xids = XidTally()
    unsubscribe = runtime.subscribe(xids.observe)
    renderer = ExpositionRenderer(xids=xids)
    server = MetricsServer(
        addr,
        render=lambda: renderer.render(runtime.latest()),
        ready=lambda: bool(runtime.ready),
        gzip=gzip,
        on_stop=(unsubscribe,),
    )
    try:
        await server.start()
    except BaseException:
        unsubscribe()
        raise
    return server
