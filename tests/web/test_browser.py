"""``gpufleet web --demo`` in a real headless Chromium: token, fleet grid, a node, one collector.

The server is the CLI itself (``python -m gpufleet web --demo``), Chromium the
system's, driven over its DevTools protocol (tests/web/chromium.py). What the
dashboard draws reaches xterm.js as websocket frames; the test reads them.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.chromium import chromium

NODES = ("node-001", "node-002", "node-003")
_URL = re.compile(rb"open (http://127\.0\.0\.1:\d+/\?token=\S+)")
SCREENSHOT_ENV = "GPUFLEET_WEB_SCREENSHOT"  # where to keep the screenshot (docs/dashboard.md)
# End to end: a simulated fleet, nats-server, a shard collector and Chromium on a shared
# machine; the guard is against a hang, not a speed requirement.
pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One ``gpufleet web --demo`` for the module: starting a simulated fleet is the slow part."""
    data = tmp_path_factory.mktemp("web") / "data"
    argv = ["web", "--demo", "--nodes", str(len(NODES)), "--addr", "127.0.0.1:0"]
    argv += ["--data-dir", str(data)]
    process = subprocess.Popen([sys.executable, "-m", "gpufleet", *argv], stderr=subprocess.PIPE)
    try:
        yield _served_url(process)
    finally:
        process.terminate()
        process.wait(timeout=120)


def _served_url(process: subprocess.Popen[bytes]) -> str:
    """The URL ``gpufleet web`` prints once it listens (each line read as it comes)."""
    assert process.stderr is not None
    said: list[bytes] = []
    for line in process.stderr:
        said.append(line)
        found = _URL.search(line)
        if found:
            threading.Thread(target=process.stderr.read, daemon=True).start()  # keep it drained
            return found.group(1).decode()
    told = b"".join(said).decode(errors="replace")
    raise AssertionError(f"gpufleet web exited before it printed its URL: {told}")


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def _words(pid: int) -> list[str]:
    """The command line of ``pid``, word by word."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")


def _processes(marker: str) -> list[int]:
    """Pids whose command line has ``marker`` among its words."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in words:
            found.append(int(entry))
    return found


async def test_a_wrong_or_missing_token_is_refused(served: str, tmp_path: Path) -> None:
    base = served.split("/?", 1)[0]
    assert _status(f"{base}/") == 403
    assert _status(f"{base}/?token=not-the-token-at-all") == 403
    assert _status(f"{base}/ws") == 403  # no session cookie: no terminal
    async with chromium(tmp_path / "profile") as page:
        await page.open(f"{base}/?token=not-the-token-at-all")
        body = await page.evaluate("document.body.innerText")
        assert "a valid token is needed" in body
        assert not page.frames  # no terminal was started


async def test_the_grid_shows_the_demo_nodes_and_enter_opens_one(
    served: str, tmp_path: Path
) -> None:
    async with chromium(tmp_path / "profile") as page:
        await page.open(served)
        await page.wait_for_text(*NODES, limit_s=300)
        assert await page.evaluate("document.cookie") == ""  # HttpOnly: not readable by script
        png = await page.screenshot()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
        keep = os.environ.get(SCREENSHOT_ENV)
        if keep:
            await asyncio.to_thread(Path(keep).write_bytes, png)
        await page.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
        seen = len(page.text())
        await page.press("Enter", "Enter", 13, "\r")
        # The node screen: the Back binding in its footer (the grid's footer has none).
        async with asyncio.timeout(120):
            while "Back" not in page.text()[seen:]:
                page.changed.clear()
                await page.changed.wait()


async def test_two_tabs_are_two_views_of_one_collector(served: str, tmp_path: Path) -> None:
    async with (
        chromium(tmp_path / "one") as first,
        chromium(tmp_path / "two") as second,
    ):
        await first.open(served)
        await second.open(served)
        await first.wait_for_text(*NODES, limit_s=300)
        await second.wait_for_text(*NODES, limit_s=300)
        tabs = _processes("gpufleet.web.tab")
        collectors = [pid for pid in _processes("serve") if pid in _children_tree(os.getpid())]
        ours = [pid for pid in tabs if pid in _children_tree(os.getpid())]
        assert len(ours) == 2
        for pid in ours:  # read-only unless asked: no tab was given --allow-actions
            assert "--allow-actions" not in _words(pid)
        assert len(collectors) == 1  # the one `gpufleet serve` shard collects for both


def _children_tree(root: int) -> set[int]:
    """Every descendant of ``root``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found
