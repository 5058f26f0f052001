"""``gpufleet watch``: the live dashboard for the fleet in the configuration (default command)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from gpufleet.config import ConfigError
from gpufleet.config_file import read_config
from gpufleet.runtime import FleetRuntime
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
    parser.add_argument(
        "--attach",
        default=None,
        metavar="nats://HOST:PORT",
        help=(
            "watch a sharded fleet through NATS (no SSH from here; "
            "-c for [cluster] credentials and shard keys)"
        ),
    )
    parser.add_argument(
        "--headless", action="store_true", help="with --attach: a summary line per tick, no UI"
    )
    parser.add_argument("--duration", type=float, default=None, help="stop after this many s")
    parser.add_argument(
        "--json-out", type=Path, default=None, help="with --attach: write every node's verdict"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.attach:
        return _run_attached(args)
    if args.headless or args.json_out is not None:
        return fail("--headless and --json-out need --attach (gpufleet demo has them too)")
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


def _run_attached(args: argparse.Namespace) -> int:
    from cluster.attach import AttachedFleet
    from cluster.auth import AuthError
    from cluster.shards import STALE_INTERVALS
    from gpufleet.attach import viewer_security, watch_attached

    if not args.attach.startswith(("nats://", "tls://")):
        return fail(f"--attach {args.attach!r}: expected nats://HOST:PORT")
    refresh_s, stale = 1.0, STALE_INTERVALS
    security: dict[str, Any] = {}
    if args.config is not None:
        try:
            config = read_config(args.config)
            security = viewer_security(config.cluster)
        except (ConfigError, AuthError) as exc:
            return fail(str(exc))
        refresh_s, stale = config.ui.refresh_s, config.cluster.stale_intervals
    viewer = AttachedFleet(
        args.attach,
        read_only=args.read_only,
        tick_s=refresh_s,
        stale_intervals=stale,
        history_dir=args.data_dir,  # export reads the shards' folders; without: over NATS
        **security,
    )
    return asyncio.run(
        watch_attached(
            viewer,
            headless=args.headless,
            theme=args.theme,
            duration_s=args.duration,
            json_out=args.json_out,
        )
    )
