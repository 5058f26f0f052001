"""``gpufleet web``: the dashboard in a browser, on 127.0.0.1, behind a token (docs/dashboard.md).

Each browser tab runs its own dashboard process (textual-serve), attached to the fleet
one collector publishes on NATS (``gpufleet.web.published``): tabs never collect.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exporter.addr import parse_addr
from gpufleet.config import ConfigError
from gpufleet.config_file import read_config
from gpufleet.session import fail, wait_for_signal
from gpufleet.web.access import Access, TokenError, exposure_warning, new_token, read_token
from gpufleet.web.section import WebSection

if TYPE_CHECKING:
    from gpufleet.web.server import DashboardServer


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "web", help="serve the dashboard to a browser (127.0.0.1, with a token)"
    )
    parser.add_argument("-c", "--config", type=Path, default=None, help="gpufleet config file")
    parser.add_argument("--addr", default=None, help="listen on HOST:PORT ([web] addr)")
    parser.add_argument(
        "--allow-actions",
        action="store_true",
        help="let browser sessions change nodes (probes, ssh); read-only without",
    )
    parser.add_argument(
        "--demo", action="store_true", help="serve the simulated demo fleet (no config)"
    )
    parser.add_argument("--nodes", type=int, default=16, help="with --demo: simulated nodes")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="with --demo: history and logs here"
    )
    parser.add_argument("--duration", type=float, default=None, help="stop after this many s")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        web, config_path = _settings(args)
        host, port = parse_addr(args.addr or web.addr)
        token = _token(web, config_path)
    except (ConfigError, TokenError, ValueError) as exc:
        return fail(str(exc))
    warning = exposure_warning(host, port)
    if warning is not None:
        print(f"gpufleet web: warning: {warning}", file=sys.stderr)
    access = Access(token or new_token())
    actions = args.allow_actions or web.actions
    served = _serve(args, config_path, host, port, access, printed=token is None, actions=actions)
    return asyncio.run(served)


def _settings(args: argparse.Namespace) -> tuple[WebSection, Path | None]:
    """``[web]`` and the config file tabs attach with (None: the demo writes one)."""
    if args.demo:
        if args.config is not None:
            raise ConfigError("--demo serves the simulated fleet: it takes no -c")
        return WebSection(), None
    from gpufleet.config import default_config_path
    from gpufleet.web.tab import viewer_for  # NATS client: only for this command

    path = args.config or default_config_path()
    config = read_config(path, given=args.config is not None)
    viewer_for(config, read_only=True)  # says now, not per tab, when [cluster] is missing
    return config.web, path


def _token(web: WebSection, config_path: Path | None) -> str | None:
    """The configured token, or None when this run makes one (and prints it once)."""
    if web.token_file is None:
        return None
    path = Path(web.token_file)
    if not path.is_absolute() and config_path is not None:
        path = config_path.parent / path
    return read_token(path)


async def _serve(
    args: argparse.Namespace,
    config_path: Path | None,
    host: str,
    port: int,
    access: Access,
    *,
    printed: bool,
    actions: bool,
) -> int:
    # aiohttp and textual-serve load only for this command, not for every gpufleet command.
    from gpufleet.web.published import DemoStartError
    from gpufleet.web.server import DashboardServer

    try:
        async with _tab_config(args, config_path) as tab_config:
            argv = [sys.executable, "-m", "gpufleet.web.tab", "-c", str(tab_config)]
            argv += ["--allow-actions"] if actions else []
            server = DashboardServer(shlex.join(argv), host, port, access, "gpufleet")
            try:
                await server.start()
            except OSError as exc:
                return fail(f"cannot listen on {host}:{port}: {exc.strerror}")
            try:
                _announce(server, access, printed=printed, actions=actions)
                await wait_for_signal(duration_s=args.duration)
            finally:
                await server.stop()
    except DemoStartError as exc:
        return fail(f"{exc} (log: {_demo_dir(args)}/web-demo.log)")
    return 0


def _demo_dir(args: argparse.Namespace) -> Path:
    if args.data_dir is None:
        args.data_dir = Path(tempfile.mkdtemp(prefix="gpufleet-web-"))
    path: Path = args.data_dir
    return path


@contextlib.asynccontextmanager
async def _tab_config(args: argparse.Namespace, config_path: Path | None) -> AsyncIterator[Path]:
    from gpufleet.web.published import demo_collector

    if config_path is not None:
        yield config_path
        return
    async with demo_collector(_demo_dir(args), args.nodes) as demo_config:
        yield demo_config


def _announce(server: DashboardServer, access: Access, *, printed: bool, actions: bool) -> None:
    mode = "actions allowed" if actions else "read-only"
    if printed:
        url = f"{server.public_url}/?{access.query()}"
        print(f"gpufleet web: open {url} ({mode}; the token is shown only now)", file=sys.stderr)
    else:
        where = f"{server.public_url}/?token=<the token in [web] token_file>"
        print(f"gpufleet web: open {where} ({mode})", file=sys.stderr)
