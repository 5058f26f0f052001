"""A real Prometheus server on loopback that scrapes given targets every second."""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from testkit.ports import holds_listener, start_on_a_free_port
from tests.runtime.waits import wait_until_async

PROMETHEUS = "/usr/bin/prometheus"


class Prometheus:
    """A running Prometheus and its HTTP query API."""

    def __init__(self, base: str, process: asyncio.subprocess.Process) -> None:
        self.base = base
        self.process = process

    def _get(self, path: str, **params: str) -> Any:
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)

    async def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` evaluates to now."""
        answer = await asyncio.to_thread(self._get, "/api/v1/query", query=expr)
        assert answer["status"] == "success", answer
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    async def label_values(self, label: str, match: str) -> list[str]:
        """What Grafana's ``label_values(match, label)`` lists."""
        path = f"/api/v1/label/{label}/values"
        answer = await asyncio.to_thread(self._get, path, **{"match[]": match})
        assert answer["status"] == "success", answer
        values: list[str] = answer["data"]
        return values

    async def wait_for(
        self, expr: str, done: Callable[[list[dict[str, Any]]], bool], within: float = 30.0
    ) -> list[dict[str, Any]]:
        """Poll ``expr`` until ``done(result)``; fail with the last result after ``within`` s."""
        result: list[dict[str, Any]] = []

        async def done_now() -> bool:
            nonlocal result
            assert self.process.returncode is None, "prometheus exited"
            with contextlib.suppress(OSError):  # not listening yet
                result = await self.query(expr)
                return done(result)
            return False

        await wait_until_async(done_now, within, lambda: f"{expr}: still {result}", every_s=0.2)
        return result


def _config(targets: list[str]) -> str:
    quoted = ", ".join(f"'{t}'" for t in targets)
    return (
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: gpufleet\n"
        f"    static_configs:\n      - targets: [{quoted}]\n"
    )


READY_WITHIN_S = 60.0


@contextlib.asynccontextmanager
async def listening(
    command: Callable[[int], list[str]],
    log: Path,
    ready_path: str,
    ports: Iterable[int] = (),
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """Run ``command(port)`` until it answers ``ready_path`` on 127.0.0.1:port; stop it on
    exit. Yields the process and its port.

    A port taken by a neighbour before the server binds it is tried again elsewhere
    (:func:`testkit.ports.start_on_a_free_port`); any other early exit fails with the
    end of ``log``.
    """

    async def start(port: int) -> asyncio.subprocess.Process:
        with log.open("wb") as out:
            return await asyncio.create_subprocess_exec(
                *command(port), stdout=out, stderr=asyncio.subprocess.STDOUT
            )

    def said() -> str:
        return log.read_text(errors="replace")

    async def ready(process: asyncio.subprocess.Process, port: int) -> bool:
        return await _ready(process, port, ready_path)

    process, port = await start_on_a_free_port(start, ready, said, ports)
    try:
        yield process, port
    finally:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()


async def _ready(process: asyncio.subprocess.Process, port: int, path: str) -> bool:
    """True once the server answers ``path`` with 200 from its own listener; False when it
    has exited (a neighbour on the port answers too, so the listener must be its own)."""
    url = f"http://127.0.0.1:{port}{path}"

    async def answered_or_exited() -> bool:
        if process.returncode is not None:
            return True
        with contextlib.suppress(OSError):  # not listening yet
            answered = await asyncio.to_thread(_status, url) == 200
            return answered and holds_listener(process.pid, port)
        return False

    await wait_until_async(answered_or_exited, READY_WITHIN_S, f"{url} to answer", every_s=0.2)
    return process.returncode is None


def _status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        status: int = response.status
        return status


def prometheus_command(config: Path, workdir: Path) -> Callable[[int], list[str]]:
    """Prometheus with ``config``, its database under ``workdir``, on the port given."""

    def command(port: int) -> list[str]:
        return [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ]

    return command


@contextlib.asynccontextmanager
async def running_prometheus(
    targets: list[str], workdir: Path, *, config_text: str | None = None
) -> AsyncIterator[Prometheus]:
    """Start Prometheus scraping ``targets`` (host:port), or as ``config_text`` says, and
    wait until it is ready. Stops it on exit.
    """
    config = workdir / "prometheus.yml"
    config.write_text(config_text if config_text is not None else _config(targets))
    command = prometheus_command(config, workdir)
    async with listening(command, workdir / "prometheus.log", "/-/ready") as (process, port):
        yield Prometheus(f"http://127.0.0.1:{port}", process)
