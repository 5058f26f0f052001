"""The dashboard in a browser: textual-serve behind a token.

textual-serve (the Textualize server for Textual apps) answers ``/`` with a page
holding an xterm.js terminal and runs ``command`` once per websocket, i.e. once per
browser tab, streaming the app's output to it. Here that command is a view attached
to a fleet that one collector already publishes (``gpufleet.web.tab``), so a tab
costs a view, never a second collection. Every path passes :class:`_Guard` first.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from textual_serve.server import Server

from gpufleet.web.access import COOKIE, Access

log = logging.getLogger("gpufleet.web")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
REFUSED = "gpufleet web: a valid token is needed (open the URL gpufleet web printed)\n"


class DashboardServer(Server):
    """textual-serve's server with a token check, started and stopped from a running loop.

    Args:
        command: the shell command each tab runs (already quoted).
        host: the address to listen on.
        port: the port (0 picks a free one; see :attr:`port` after :meth:`start`).
        access: the token check of this run.
        title: the page title.
    """

    def __init__(self, command: str, host: str, port: int, access: Access, title: str) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self._access = access
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        """Listen on ``host:port``; the public URL names the port actually bound."""
        app = await self._make_app()
        app.middlewares.append(self._guard)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.public_url = f"http://{host}:{self.port}"

    async def stop(self) -> None:
        """Close every tab's websocket (their views exit) and stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve prints a banner here; gpufleet web says its own line instead."""

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path == "/" and self._access.token_ok(request.query.get("token")):
            response = await handler(request)
            response.set_cookie(
                COOKIE, self._access.session, httponly=True, samesite="Strict", path="/"
            )
            return response
        if self._access.session_ok(request.cookies.get(COOKIE)):
            return await handler(request)
        log.warning("refused %s %s from %s", request.method, request.path, request.remote)
        return web.Response(status=403, text=REFUSED)
