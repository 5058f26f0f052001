"""Running a fleet from the command line: config in, runtime up, dashboard or headless.

Shared by ``watch``, ``demo`` and ``serve`` so every command builds the fleet the
same way and shuts it down the same way (history flushed, connections closed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import platformdirs

from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget
from gpufleet.config import Config, ConfigError, default_config_path
from gpufleet.config_file import read_config
from gpufleet.runtime import FleetRuntime
from gpufleet.targets import options_from_config, targets_from_config


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/gpufleet`` (or the platform's equivalent)."""
    return Path(platformdirs.user_data_dir("gpufleet"))


def add_fleet_arguments(parser: argparse.ArgumentParser) -> None:
    """``-c`` and ``--data-dir``, common to the commands that watch a configured fleet."""
    parser.add_argument("-c", "--config", type=Path, default=None, help="configuration file (TOML)")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="history directory (default: XDG data dir)"
    )


def load_fleet(args: argparse.Namespace) -> tuple[Config, list[NodeTarget], SshOptions]:
    """The config named by ``-c`` (or the default path), its node targets and SSH options.

    Raises:
        ConfigError: the configuration is missing or invalid (the message says where).
    """
    path: Path = args.config or default_config_path()
    config = read_config(path, given=args.config is not None)
    targets = targets_from_config(
        config.fleet,
        base_dir=path.parent,
        source=str(path),
        contract=config.contract,
        jobs=config.jobs,
    )
    if not targets:
        raise ConfigError(f"{path}: key 'fleet.hosts': expected at least one host")
    return config, targets, options_from_config(config.fleet)


@contextlib.asynccontextmanager
async def running(runtime: FleetRuntime, metrics_addr: str | None) -> AsyncIterator[None]:
    """Start the runtime (and the metrics endpoint when asked) and stop both on exit."""
    server = None
    await runtime.start()
    try:
        if metrics_addr:
            from exporter.endpoint import start_metrics_endpoint

            metrics = runtime.config.metrics
            server = await start_metrics_endpoint(
                metrics_addr,
                runtime,
                gzip=metrics.gzip,
                raw_port_counters=metrics.raw_port_counters,
            )
        yield
    finally:
        if server is not None:
            await server.stop()
        await runtime.stop()


async def run_dashboard(
    runtime: FleetRuntime,
    *,
    theme: str | None,
    metrics_addr: str | None = None,
) -> int:
    """Run the live dashboard over ``runtime`` until the operator quits."""
    from tui.app import build_app  # textual loads only for the commands that draw

    app = build_app(
        runtime, theme=theme, read_only=runtime.read_only, refresh_s=runtime.config.ui.refresh_s
    )
    async with running(runtime, metrics_addr):
        await app.run_async()
    return app.return_code or 0


async def wait_for_signal(
    signals: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
    duration_s: float | None = None,
) -> None:
    """Return on the first of ``signals`` (or after ``duration_s`` seconds)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), duration_s)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


def metrics_addr_for(args: argparse.Namespace, config: Config) -> str | None:
    """``--metrics-addr``, else ``[metrics] addr`` when ``in_dashboard`` asks for it."""
    addr: str | None = getattr(args, "metrics_addr", None)
    return addr or (config.metrics.addr if config.metrics.in_dashboard else None)


def fail(message: str) -> int:
    """Print ``message`` as the command's error and return the exit status for it."""
    print(f"gpufleet: {message}", file=sys.stderr)
    return 2
