"""One browser tab's dashboard: a view attached to the published fleet, collecting nothing.

``gpufleet web`` runs ``python -m gpufleet.web.tab -c CONFIG [--allow-actions]`` once
per tab (textual-serve starts it with the web driver). The config's ``[cluster]``
names the NATS server the fleet's collector publishes to and the credentials to read
it with, as for ``gpufleet watch --attach``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from cluster.attach import AttachedFleet
from gpufleet.attach import watch_attached
from gpufleet.config import Config, ConfigError
from gpufleet.config_file import read_config


def viewer_for(config: Config, *, read_only: bool) -> AttachedFleet:
    """The attached view a tab shows, from the config's ``[cluster]`` and ``[ui]``.

    Raises:
        ConfigError: the config names no NATS server.
    """
    cluster = config.cluster
    if not cluster.nats_url:
        raise ConfigError("[cluster] nats_url: a tab attaches to the fleet published there")
    return AttachedFleet(
        cluster.nats_url,
        read_only=read_only,
        tick_s=config.ui.refresh_s,
        stale_intervals=cluster.stale_intervals,
        auth=cluster.nats_auth(),
        keys=cluster.shard_keys(),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpufleet.web.tab")
    parser.add_argument("-c", "--config", type=Path, required=True)
    parser.add_argument("--allow-actions", action="store_true")
    args = parser.parse_args(argv)
    try:
        config = read_config(args.config)
        viewer = viewer_for(config, read_only=not args.allow_actions)
    except ConfigError as exc:
        print(f"gpufleet web: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(watch_attached(viewer, headless=False, theme=config.ui.theme))


if __name__ == "__main__":
    sys.exit(main())
