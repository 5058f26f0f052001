"""Connecting to NATS the way every gpufleet process does, and the event stream's shape."""

from __future__ import annotations

import contextlib
import logging

from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.errors import BadRequestError

from cluster.wire import EVENTS_WILDCARD, STREAM

log = logging.getLogger(__name__)

# A day of transitions and events: enough for a dashboard attaching in the morning to
# replay the night; the parquet history is the long-term record.
EVENTS_MAX_AGE_S = 24 * 3600.0
FIRST_CONNECT_ATTEMPTS = 2


class BusError(ConnectionError):
    """NATS could not be reached or refused what was asked (the message says which)."""


async def connect(url: str, name: str) -> Client:
    """A NATS connection that reconnects forever (a restarted server is picked up again).

    Raises:
        BusError: no server answered at ``url`` on the first try.
    """

    async def on_error(exc: Exception) -> None:
        log.info("nats: %s", exc)  # the caller reports what matters, once

    nc = Client()
    try:
        await nc.connect(
            url,
            name=name,
            connect_timeout=5,
            allow_reconnect=True,
            max_reconnect_attempts=FIRST_CONNECT_ATTEMPTS,
            reconnect_time_wait=1,
            error_cb=on_error,
        )
    except Exception as exc:  # nats-py raises NoServersError, OSError, TimeoutError, ...
        with contextlib.suppress(Exception):  # its reader and flusher tasks end here
            await nc.close()
        raise BusError(f"cannot reach NATS at {url}: {exc or type(exc).__name__}") from None
    # nats-py applies one limit to the first connect and to reconnects: a wrong URL must
    # fail in seconds, a server restarted later must be found again however long it takes.
    nc.options["max_reconnect_attempts"] = -1
    return nc


async def ensure_event_stream(js: JetStreamContext) -> None:
    """Create the shards' event stream, or keep the one that exists."""
    try:
        await js.add_stream(name=STREAM, subjects=[EVENTS_WILDCARD], max_age=EVENTS_MAX_AGE_S)
    except BadRequestError as exc:
        # Another shard created it first with other limits: theirs is as good.
        log.info("nats: event stream kept as it is: %s", exc)
