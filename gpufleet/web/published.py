"""The one collector the browser tabs watch, and the config a tab attaches with.

``gpufleet web`` never collects in the tabs. Either the fleet is already published on
NATS by ``gpufleet serve --nats-url`` (the config's ``[cluster]`` says where, with the
credentials a view reads it with), or, for ``--demo``, one ``gpufleet demo --shards 1
--headless`` child runs the simulated nodes, a local nats-server with fresh
credentials and one ``serve`` shard, and writes the operator's config that the tabs
use. Either way one process collects, whatever the number of tabs.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

DEMO_CONFIG = "demo-config.toml"  # written by `gpufleet demo --shards` for attaching views
DEMO_READY_S = 60.0
DEMO_STOP_S = 30.0


class DemoStartError(RuntimeError):
    """The demo collector exited or wrote no config in time (the message says which)."""


@contextlib.asynccontextmanager
async def demo_collector(data_dir: Path, nodes: int) -> AsyncIterator[Path]:
    """Run the simulated fleet and its one collector; yield the config tabs attach with.

    Its log goes to ``data_dir/web-demo.log``. On exit it gets SIGTERM (it flushes
    history and stops its nats-server) and, after ``DEMO_STOP_S``, SIGKILL.

    Raises:
        DemoStartError: the child exited, or wrote no config within ``DEMO_READY_S``.
    """
    config = await asyncio.to_thread(_fresh, data_dir)
    argv = ["demo", "--shards", "1", "--headless", "--nodes", str(nodes)]
    argv += ["--data-dir", str(data_dir)]
    with (data_dir / "web-demo.log").open("ab") as log:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "gpufleet",
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        await _config_written(child, config)
        yield config
    finally:
        await _stop(child)


def _fresh(data_dir: Path) -> Path:
    """The demo's config path in ``data_dir``, with any config of an earlier run gone."""
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / DEMO_CONFIG
    config.unlink(missing_ok=True)
    return config


async def _config_written(child: asyncio.subprocess.Process, config: Path) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEMO_READY_S
    while not await asyncio.to_thread(config.is_file):
        if child.returncode is not None:
            raise DemoStartError(f"the demo collector exited with status {child.returncode}")
        if loop.time() > deadline:
            raise DemoStartError(f"the demo collector wrote no {config} in {DEMO_READY_S:g} s")
        # Polling a file the child writes once: its exit is the other thing watched.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(child.wait(), 0.2)


async def _stop(child: asyncio.subprocess.Process) -> None:
    if child.returncode is None:
        child.terminate()
    try:
        await asyncio.wait_for(child.wait(), DEMO_STOP_S)
    except TimeoutError:
        child.kill()
        await child.wait()
