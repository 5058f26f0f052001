"""A real headless Chromium driven over the DevTools protocol (CDP), for the web tests.

Chromium is started with ``--remote-debugging-port=0`` and says on stderr which
websocket its DevTools listen on; aiohttp (a textual-serve dependency) speaks the
websocket. One page is opened and attached in flat mode; its websocket frames are
collected (``Network.webSocketFrameReceived``), which is how the test reads what the
dashboard drew: the terminal's output reaches xterm.js as those frames.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
_LISTENING = re.compile(rb"DevTools listening on (ws://\S+)")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]")
START_S = 30.0


class Page:
    """One browser page: commands, and the text of the websocket frames it received."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, session: str) -> None:
        self._ws = ws
        self._session = session
        self._ids = itertools.count(1000)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.frames: list[str] = []
        self.changed = asyncio.Event()
        self.loaded = asyncio.Event()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Run one CDP command on this page and return its result."""
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        message = {"id": ident, "method": method, "params": params, "sessionId": self._session}
        await self._ws.send_str(json.dumps(message))
        return await future

    async def open(self, url: str, limit_s: float = 30.0) -> None:
        """Navigate to ``url`` and wait for its load event."""
        self.loaded.clear()
        await self.send("Page.navigate", url=url)
        async with asyncio.timeout(limit_s):
            await self.loaded.wait()

    def text(self) -> str:
        """Everything the page's websockets received, escape sequences removed."""
        return _ANSI.sub("", "".join(self.frames))

    async def wait_for_text(self, *needles: str, limit_s: float = 60.0) -> str:
        """Wait until every needle is in :meth:`text` (frames arriving wake the wait)."""
        async with asyncio.timeout(limit_s):
            while True:
                text = self.text()
                if all(n in text for n in needles):
                    return text
                self.changed.clear()
                await self.changed.wait()

    async def press(self, key: str, code: str, key_code: int, text: str = "") -> None:
        """A key press as the keyboard makes it (down with its text, then up)."""
        down = {"key": key, "code": code, "windowsVirtualKeyCode": key_code}
        await self.send("Input.dispatchKeyEvent", type="keyDown", text=text, **down)
        await self.send("Input.dispatchKeyEvent", type="keyUp", **down)

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        return result["result"].get("value")

    async def screenshot(self) -> bytes:
        """A PNG of the page once the browser has drawn what it has received."""
        await self.evaluate(
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        result = await self.send("Page.captureScreenshot", format="png")
        return base64.b64decode(result["data"])

    def dispatch(self, message: dict[str, Any]) -> None:
        ident = message.get("id")
        if ident in self._pending:
            future = self._pending.pop(ident)
            if "error" in message:
                future.set_exception(RuntimeError(str(message["error"])))
            else:
                future.set_result(message.get("result", {}))
            return
        if message.get("method") == "Page.loadEventFired":
            self.loaded.set()
        elif message.get("method") == "Network.webSocketFrameReceived":
            frame = message["params"]["response"]
            data = frame["payloadData"]
            if frame.get("opcode") == 2:  # binary: the terminal's bytes, base64 in CDP
                data = base64.b64decode(data).decode("utf-8", "replace")
            self.frames.append(data)
            self.changed.set()


@contextlib.asynccontextmanager
async def chromium(profile: Path, width: int = 1280, height: int = 800) -> AsyncIterator[Page]:
    """A headless Chromium with one attached page (network events on)."""
    process = await asyncio.create_subprocess_exec(
        CHROMIUM,
        "--headless=new",
        "--no-sandbox",  # root in the test container; the page is our own loopback server
        "--disable-gpu",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "--remote-debugging-port=0",
        "about:blank",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        url = await _devtools_url(process)
        async with aiohttp.ClientSession() as http, http.ws_connect(url, max_msg_size=0) as ws:
            page = await _attach(ws)
            yield page
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


async def _devtools_url(process: asyncio.subprocess.Process) -> str:
    assert process.stderr is not None
    async with asyncio.timeout(START_S):
        while True:
            line = await process.stderr.readline()
            if not line:
                raise RuntimeError("chromium exited before its DevTools listened")
            found = _LISTENING.search(line)
            if found:
                asyncio.get_running_loop().create_task(_drain(process.stderr))
                return found.group(1).decode()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


async def _attach(ws: aiohttp.ClientWebSocketResponse) -> Page:
    await ws.send_str(
        json.dumps({"id": 1, "method": "Target.createTarget", "params": {"url": "about:blank"}})
    )
    target = (await _reply(ws, 1))["targetId"]
    params = {"targetId": target, "flatten": True}
    await ws.send_str(json.dumps({"id": 2, "method": "Target.attachToTarget", "params": params}))
    session = (await _reply(ws, 2))["sessionId"]
    page = Page(ws, session)
    asyncio.get_running_loop().create_task(_read(ws, page))
    await page.send("Network.enable")
    await page.send("Page.enable")
    return page


async def _reply(ws: aiohttp.ClientWebSocketResponse, ident: int) -> dict[str, Any]:
    async for message in ws:
        data = json.loads(message.data)
        if data.get("id") == ident:
            if "error" in data:
                raise RuntimeError(str(data["error"]))
            result: dict[str, Any] = data["result"]
            return result
    raise RuntimeError("the DevTools connection closed")


async def _read(ws: aiohttp.ClientWebSocketResponse, page: Page) -> None:
    async for message in ws:
        page.dispatch(json.loads(message.data))
