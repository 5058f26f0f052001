"""``gpufleet watch``: the live dashboard for the fleet in the configuration (default command)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from fleet.config import ConfigError
from fleet.runtime import FleetRuntime
from gpufleet.session import (
    add_fleet_arguments,
    default_data_dir,
    fail,
    load_fleet,
    metrics_addr_for,
    run_dashboard,
)


def register(sub: Any) -> None:
    parser = sub.add_parser("watch", help="the live dashboard for the configured fleet (default)")
    add_fleet_arguments(parser)
    parser.add_argument("--theme", default=None, help="gpufleet-dark, gpufleet-light, ...")
    parser.add_argument(
        "--read-only", action="store_true", help="hide actions that change anything on nodes"
    )
    parser.add_argument(
        "--metrics-addr", default=None, help="also serve Prometheus /metrics at HOST:PORT"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config, targets, options = load_fleet(args)
    except ConfigError as exc:
        return fail(str(exc))
    runtime = FleetRuntime(
        config,
        targets,
        data_dir=args.data_dir or default_data_dir(),
        read_only=args.read_only,
        ssh_options=options,
    )
    theme = args.theme or config.ui.theme
    return asyncio.run(
        run_dashboard(runtime, theme=theme, metrics_addr=metrics_addr_for(args, config))
    )
