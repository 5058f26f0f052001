"""A small asyncio HTTP/1.1 server for ``/metrics``, ``/-/ready`` and ``/-/healthy``.

Why not prometheus_client's ``start_http_server``: it runs a thread-per-request
``ThreadingHTTPServer`` that renders through ``generate_latest`` (the slow path),
and it cannot be stopped and awaited with the rest of an asyncio program. This
server lives on the runtime's event loop, binds port 0 for tests, closes every
client connection on :meth:`MetricsServer.stop`, and renders ``/metrics`` on the loop in
slices while sending it (:mod:`exporter.streaming`). It speaks just
enough HTTP for Prometheus, curl and a browser: GET and HEAD, keep-alive, no
request bodies; optionally over TLS and behind basic auth (``web.yml``, see
:mod:`exporter.web_config`). Paths beyond the built-in ones come from a
router (the dcgm-exporter shape and service discovery, :mod:`exporter.endpoint`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence

from collectors.tasks import cancel_all
from exporter.addr import DEFAULT_METRICS_ADDR, is_loopback, parse_addr
from exporter.gzip_body import gzipped
from exporter.http_request import BadRequest, Request, parse_request
from exporter.shared_body import RenderFailed, SharedBodies, Tick
from exporter.streaming import StreamAborted, send_data
from exporter.text import CONTENT_TYPE
from exporter.web_config import FAILURE_REFILL_S, WebConfig
from fleet.native_heap import release_free_heap

log = logging.getLogger(__name__)

HEADER_LIMIT = 16 * 1024  # bytes of request line and headers; a scraper sends a few hundred
IDLE_TIMEOUT_S = 75.0  # keep-alive connections idle longer than this are closed
TEXT = "text/plain; charset=utf-8"
_GZIP_HEADERS = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"}  # copied, never changed
MAX_CONNECTIONS = 128  # Prometheus keeps one per target; 128 leaves room for people
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
REASONS |= {429: "Too Many Requests", 503: "Service Unavailable"}
REASONS |= {405: "Method Not Allowed"}
REASONS |= {431: "Request Header Fields Too Large", 500: "Internal Server Error"}
REASONS |= {503: "Service Unavailable"}

Page = tuple[int, bytes, str]
"""An answer: status, body, content type."""
Stream = Callable[[], Iterator[bytes]]
"""Starts a ``/metrics`` body rendered part by part as it is iterated (on the loop)."""
Router = Callable[[str, str], Page | None]
"""Answers ``(path, host header)`` for paths beyond the built-in ones; None means 404."""


class MetricsServer:
    """Serves the exposition that ``stream`` renders, on ``addr``.

    Args:
        addr: ``host:port`` to listen on; loopback by default, port 0 for any free port.
        stream: starts the ``/metrics`` body as parts rendered while they are iterated
            (on the loop, in slices). The body goes out in HTTP/1.1 chunks as it is
            rendered; one stream at a time.
        tick: what a body rendered now would show (:data:`exporter.shared_body.Tick`):
            scrapes of the same tick in the same encoding share one rendering
            (:mod:`exporter.shared_body`). None renders a body per scrape.
        ready: whether ``/-/ready`` answers 200 (every node tried) or 503.
        gzip: compress ``/metrics`` when the client's Accept-Encoding allows gzip.
        on_stop: called once when the server stops (e.g. to unsubscribe from a runtime).
        routes: answers the paths that are not built in (called in a worker thread).
        web: TLS and basic auth; None serves plain HTTP to anyone who can connect.
        after_stream: called on the loop when a ``/metrics`` body's rendering ends
            (rendered or not). By default it gives the C heap's free pages back: a scrape's text,
            freed among the long-lived allocations ingest made meanwhile, left ~20 MiB
            of holes resident at 1,000 nodes until the next full collection's trim (up
            to 30 s later); the trim took ~5 ms there (bench/results/history.md, run 10).
        max_connections: client connections served at once; more are answered 503.
    """

    def __init__(
        self,
        addr: str = DEFAULT_METRICS_ADDR,
        *,
        stream: Stream,
        tick: Callable[[], Tick] | None = None,
        ready: Callable[[], bool] = lambda: True,
        gzip: bool = True,
        on_stop: Sequence[Callable[[], None]] = (),
        routes: Router | None = None,
        web: WebConfig | None = None,
        after_stream: Callable[[], object] = release_free_heap,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.host, self.port = parse_addr(addr)
        self._routes = routes
        self._web = web if web is not None else WebConfig()
        self.bodies = SharedBodies(stream, tick, after_stream)
        self._ready = ready
        self._gzip = gzip
        self._on_stop = tuple(on_stop)
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()
        self._max_connections = max_connections
        self.refused_connections = 0  # connections turned away at the cap

    @property
    def bound_port(self) -> int:
        """The port actually listened on (the chosen one when ``addr`` said port 0)."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError("the metrics server is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def url(self) -> str:
        """``http(s)://host:port`` of the running server (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self._web.scheme}://{host}:{self.bound_port}"

    async def start(self) -> None:
        """Listen. Raises OSError when the address is taken or not local."""
        self._server = await asyncio.start_server(
            self._serve_client, self.host, self.port, limit=HEADER_LIMIT, ssl=self._web.tls
        )
        log.info("metrics endpoint listening", extra={"url": f"{self.url}/metrics"})
        if not is_loopback(self.host):
            self._warn_exposed()

    def _warn_exposed(self) -> None:
        """Say that the fleet's telemetry is reachable from other hosts, and how it is guarded."""
        guards = [g for g, on in (("TLS", self._web.tls), ("basic auth", self._web.users)) if on]
        advice = (
            f"guarded by {' and '.join(guards)}"
            if guards
            else "unencrypted and without authentication; set [metrics] web_config_file"
            " for TLS and basic auth, or listen on 127.0.0.1"
        )
        log.warning(
            "metrics endpoint listens beyond loopback: node names, GPU serials and fleet"
            f" health are readable by any host that can reach {self.host}:{self.bound_port};"
            f" {advice}",
            extra={"addr": f"{self.host}:{self.bound_port}"},
        )

    async def stop(self) -> None:
        """Stop listening, close every client connection and run the ``on_stop`` hooks."""
        if self._server is None:
            return
        self._server.close()
        clients = tuple(self._clients)
        await cancel_all(clients, 1.0)  # a dropped cancel is sent again
        await asyncio.gather(*clients, return_exceptions=True)  # their errors, read
        await self.bodies.stop()
        await self._server.wait_closed()
        self._server = None
        for hook in self._on_stop:
            hook()

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._clients) >= self._max_connections:
            # Each connection holds a file descriptor `serve` shares with its SSH
            # sessions: past the cap a client is told to come back, not queued.
            self.refused_connections += 1
            with contextlib.suppress(ConnectionError):
                await _respond(writer, 503, b"too many connections\n", TEXT, False)
            writer.close()
            return
        self._clients.add(task)
        try:
            await self._serve_requests(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client went away or idled out: nothing to answer
        finally:
            self._clients.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while True:
            try:
                async with asyncio.timeout(IDLE_TIMEOUT_S):
                    head = await reader.readuntil(b"\r\n\r\n")
                request = parse_request(head)
            except asyncio.LimitOverrunError:
                await _respond(writer, 431, b"request headers too large\n", TEXT, False)
                return
            except BadRequest as bad:
                await _respond(writer, bad.status, b"bad request\n", TEXT, False)
                return
            await self._answer(request, writer)
            if not request.keep_alive or request.close_after:
                return

    async def _answer(self, request: Request, writer: asyncio.StreamWriter) -> None:
        head_only = request.method == "HEAD"
        path = request.path.split("?", 1)[0]
        if self._web.users:
            verdict = await asyncio.to_thread(
                self._web.check, request.headers.get("authorization"), _client_of(writer)
            )
            if verdict == "throttled":
                retry = {"Retry-After": str(int(FAILURE_REFILL_S))}
                await _respond(writer, 429, b"too many failed logins\n", TEXT, head_only, retry)
                return
            if verdict != "ok":
                challenge = {"WWW-Authenticate": 'Basic realm="gpufleet"'}
                await _respond(writer, 401, b"unauthorized\n", TEXT, head_only, challenge)
                return
        if path == "/metrics":
            await self._stream_metrics(request, writer, head_only)
        elif path == "/-/healthy":
            await _respond(writer, 200, b"gpufleet exporter is healthy\n", TEXT, head_only)
        elif path == "/-/ready":
            ready = self._ready()
            body = b"ready\n" if ready else b"not ready: some nodes were not tried yet\n"
            await _respond(writer, 200 if ready else 503, body, TEXT, head_only)
        elif path == "/":
            body = b"gpufleet exporter: /metrics /metrics/dcgm /sd /-/ready /-/healthy\n"
            await _respond(writer, 200, body, TEXT, head_only)
        else:
            await self._route(request, path, writer, head_only)

    async def _route(
        self, request: Request, path: str, writer: asyncio.StreamWriter, head_only: bool
    ) -> None:
        routes = self._routes
        page = None
        if routes is not None:
            host = request.headers.get("host") or f"{self.host}:{self.bound_port}"
            try:
                page = await asyncio.to_thread(routes, path, host)
            except Exception:  # a rendering bug: say so in the log and to the scraper
                log.exception("answering %s failed", path)
                await _respond(writer, 500, b"rendering the page failed\n", TEXT, head_only)
                return
        if page is None:
            await _respond(writer, 404, b"not found\n", TEXT, head_only)
            return
        status, page_body, content_type = page
        if self._gzip and request.wants_gzip:
            zipped = await asyncio.to_thread(gzipped, page_body)
            await _respond(writer, status, zipped, content_type, head_only, dict(_GZIP_HEADERS))
            return
        await _respond(writer, status, page_body, content_type, head_only)

    async def _stream_metrics(
        self, request: Request, writer: asyncio.StreamWriter, head_only: bool
    ) -> None:
        """Send ``/metrics`` as it is rendered: this tick's body in the encoding asked for.

        HTTP/1.1 gets chunked transfer coding; HTTP/1.0 a body ended by closing the
        connection. HEAD renders nothing (its length is not known in advance).
        """
        compress = self._gzip and request.wants_gzip
        chunked = request.version != "HTTP/1.0"
        headers = {"Content-Type": CONTENT_TYPE}
        headers |= {"Transfer-Encoding": "chunked"} if chunked else {"Connection": "close"}
        if compress:
            headers |= _GZIP_HEADERS
        request.close_after = not chunked
        if head_only:
            writer.write(_head(200, headers))
            await writer.drain()
            return
        body = self.bodies.body(compress)
        try:
            await body.opened()
        except RenderFailed:
            await _respond(writer, 500, b"rendering the metrics failed\n", TEXT, False)
            return
        writer.write(_head(200, headers))
        try:
            async for piece in body.pieces():
                await send_data(writer, piece, chunked)
        except StreamAborted:
            request.close_after = True
            writer.transport.abort()
            return
        if chunked:
            writer.write(b"0\r\n\r\n")


def _client_of(writer: asyncio.StreamWriter) -> str:
    """The peer's address (not its port: a guesser opens a new connection per try)."""
    peer = writer.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else "?"


async def _respond(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    content_type: str,
    head_only: bool,
    extra: dict[str, str] | None = None,
) -> None:
    headers = {"Content-Type": content_type, "Content-Length": str(len(body))}
    if status == 405:
        headers["Allow"] = "GET, HEAD"
    headers |= extra or {}
    writer.write(_head(status, headers))
    if not head_only:
        writer.write(body)
    await writer.drain()


def _head(status: int, headers: dict[str, str]) -> bytes:
    """The status line and headers of a response."""
    lines = [f"HTTP/1.1 {status} {REASONS[status]}"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
