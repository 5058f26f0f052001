"""``gpufleet check``: validate the configuration and try every node once."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cluster.shards import format_assignment, parse_shard
from collectors.bundle import agent_zipapp_bytes
from collectors.ssh.check import NodeCheck, check_node
from collectors.ssh.options import SshOptions
from collectors.ssh.target import NodeTarget
from gpufleet.config import ConfigError
from gpufleet.session import fail, load_fleet


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "check", help="validate the config and try every node once (connect, agent hello)"
    )
    parser.add_argument("-c", "--config", type=Path, default=None, help="configuration file (TOML)")
    parser.add_argument(
        "--hello-timeout", type=float, default=30.0, help="seconds to wait for each agent's hello"
    )
    parser.add_argument(
        "--shards",
        type=_shard_count,
        default=None,
        metavar="N",
        help="print which of N shards owns each host (rendezvous hashing) and connect nowhere",
    )
    parser.set_defaults(func=run)


def _shard_count(text: str) -> int:
    try:
        return parse_shard(f"1/{text}").count
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every node said hello with every GPU it should have, 1 when any
    failed (unreachable, no agent, no NVML, GPUs missing), 2 for a bad configuration."""
    try:
        _, targets, options = load_fleet(args)
    except ConfigError as exc:
        return fail(str(exc))
    if args.shards is not None:
        print(format_assignment([t.name for t in targets], args.shards))
        return 0
    results = asyncio.run(check_fleet(targets, options, args.hello_timeout))
    print(format_table(results))
    failed = sum(1 for r in results if not r.ok)
    print(f"{len(results) - failed} of {len(results)} nodes ok")
    return 1 if failed else 0


async def check_fleet(
    targets: Sequence[NodeTarget], options: SshOptions, hello_within: float = 30.0
) -> list[NodeCheck]:
    """Try every node once, at most ``max_concurrent_connects`` at a time, in target order."""
    bundle = options.agent_bundle
    if bundle is None:
        bundle = await asyncio.to_thread(agent_zipapp_bytes)
    gate = asyncio.Semaphore(options.max_concurrent_connects)

    async def one(target: NodeTarget, bundle: tuple[str, bytes]) -> NodeCheck:
        async with gate:
            return await check_node(target, options, bundle, hello_within)

    return list(await asyncio.gather(*(one(t, bundle) for t in targets)))


def format_table(results: Sequence[NodeCheck]) -> str:
    """A plain table: node, ok or the failure status, and the hello's facts or the reason."""
    rows = [("NODE", "RESULT", "DETAIL")]
    for result in results:
        if result.hello is not None and result.cause is not None:
            rows.append((result.name, "failed", result.cause))
        elif result.hello is not None:
            hello = result.hello
            model = hello.gpus[0].name if hello.gpus else "no GPU"
            detail = f"{model} x{len(hello.gpus)}, driver {hello.driver or 'N/A'}"
            rows.append((result.name, "ok", detail))
        else:
            rows.append((result.name, result.status, result.reason))
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return "\n".join(
        f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}".rstrip() for row in rows
    )
