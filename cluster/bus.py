"""Connecting to NATS the way every gpufleet process does, and the event stream's shape."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl

from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, StreamConfig
from nats.js.errors import BadRequestError

from cluster.auth import AuthError, NatsAuth, redact
from cluster.wire import EVENTS_WILDCARD, STREAM

log = logging.getLogger(__name__)

# A day of transitions and events: enough for a dashboard attaching in the morning to
# replay the night; the parquet history is the long-term record.
EVENTS_MAX_AGE_S = 24 * 3600.0
# What a flood can make every attaching viewer replay: the oldest goes first.
EVENTS_MAX_BYTES = 256 * 1024 * 1024
EVENTS_MAX_MSG_BYTES = 1024 * 1024  # a shard's event batch for one tick
FIRST_CONNECT_ATTEMPTS = 2
# The first connect as a whole, TLS handshake and authentication included: a server
# that cannot be trusted (or never answers) is reported in seconds, not retried.
FIRST_CONNECT_S = 10.0
_warned_open = False


class BusError(ConnectionError):
    """NATS could not be reached or refused what was asked (the message says which)."""


async def connect(url: str, name: str, auth: NatsAuth | None = None) -> Client:
    """A NATS connection that reconnects forever (a restarted server is picked up again).

    Raises:
        BusError: no server answered at ``url`` on the first try, it refused the
            credentials, or its certificate is not one ``auth`` trusts (one line, no secret).
    """
    auth = auth or NatsAuth()
    shown = redact(url)
    _warn_if_open(url, auth)

    errors: list[BaseException] = []  # what the server or TLS said, before "no servers"

    async def on_error(exc: Exception) -> None:
        if len(errors) < 8:
            errors.append(exc)
        log.info("nats: %s", auth.scrub(str(exc)))  # the caller reports what matters, once

    nc = Client()
    try:
        options = auth.connect_options(url)
        await asyncio.wait_for(
            nc.connect(
                url,
                name=name,
                connect_timeout=5,
                allow_reconnect=True,
                max_reconnect_attempts=FIRST_CONNECT_ATTEMPTS,
                reconnect_time_wait=1,
                error_cb=on_error,
                **options,
            ),
            FIRST_CONNECT_S,
        )
    except AuthError as exc:
        raise BusError(str(exc)) from None
    except Exception as exc:  # nats-py raises NoServersError, OSError, TimeoutError, ...
        with contextlib.suppress(Exception):  # its reader and flusher tasks end here
            await nc.close()
        reason = _reason([*errors, getattr(nc, "last_error", None)], exc)
        raise BusError(auth.scrub(f"cannot reach NATS at {shown}: {reason}")) from None
    # nats-py applies one limit to the first connect and to reconnects: a wrong URL must
    # fail in seconds, a server restarted later must be found again however long it takes.
    nc.options["max_reconnect_attempts"] = -1
    return nc


def _reason(seen: list[BaseException | None], exc: BaseException) -> str:
    """The most telling cause: nats-py reports the real error (a certificate refused, an
    authorization violation) to its error callback and raises just "no servers"."""
    causes = [cause for cause in seen if cause is not None] + [exc]
    for cause in causes:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"server certificate not trusted ({cause.verify_message}); set nats_tls_ca_file"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or cause})"
    for cause in causes:
        text = " ".join(str(cause or "").split())
        if text:
            return text[:200]
    if isinstance(exc, TimeoutError):
        return f"no answer within {FIRST_CONNECT_S:.0f} s"
    return type(exc).__name__


def _warn_if_open(url: str, auth: NatsAuth) -> None:
    """Warn once per process that anyone who reaches this NATS drives the fleet."""
    global _warned_open
    if _warned_open or auth.authenticated or "@" in url:
        return
    _warned_open = True
    log.warning(
        "NATS at %s without credentials: anyone who can reach it can read the fleet, publish "
        "summaries and request probes (see docs/scale-out.md, Securing NATS)",
        redact(url),
    )


async def ensure_event_stream(js: JetStreamContext) -> None:
    """Create the shards' event stream with its limits, or bring an existing one to them."""
    config = StreamConfig(
        name=STREAM,
        subjects=[EVENTS_WILDCARD],
        max_age=EVENTS_MAX_AGE_S,
        max_bytes=EVENTS_MAX_BYTES,
        max_msg_size=EVENTS_MAX_MSG_BYTES,
        discard=DiscardPolicy.OLD,
    )
    try:
        await js.add_stream(config)
    except BadRequestError:
        try:  # made earlier (by an older shard, without limits): the limits apply now
            await js.update_stream(config)
        except Exception as exc:  # a user without the right to change it: theirs stays
            log.info("nats: event stream kept as it is: %s", exc)
