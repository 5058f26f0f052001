"""``gpufleet demo --shards N``: a local nats-server, N ``serve --shard`` processes, one view.

The simulated nodes run in this process (as for the plain demo); each shard is a
separate ``gpufleet serve --shard K/N`` process reaching its share of them over SSH
and publishing to the local nats-server; the dashboard (or ``--headless``) attaches
through NATS only. History goes to ``DATA/shard=K``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from cluster.attach import AttachedFleet
from cluster.natsd import LocalNats, NatsServerError, start_nats_server
from collectors.demo import DemoFleet
from gpufleet.attach import watch_attached
from gpufleet.invocation import command_line
from gpufleet.session import fail
from gpufleet.shard import write_targets_file

SHARD_STOP_S = 20.0


def cluster_config(contract: str, nodes: int, nats_url: str) -> str:
    """The demo's contract plus the fleet's hosts and the NATS URL, as TOML."""
    return (
        contract
        + f'\n[fleet]\nhosts = ["node-[001-{nodes:03d}]"]\n'
        + f"\n[cluster]\nnats_url = {json.dumps(nats_url)}\n"
    )


@contextlib.asynccontextmanager
async def shard_processes(
    count: int, config: Path, targets: Path, data_dir: Path
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Start ``count`` shard processes; SIGTERM them (they flush history) on exit."""
    processes = []
    try:
        for k in range(1, count + 1):
            argv = ["serve", "-c", str(config), "--data-dir", str(data_dir)]
            argv += ["--shard", f"{k}/{count}", "--targets-file", str(targets)]
            argv += ["--metrics-addr", "127.0.0.1:0"]
            with (data_dir / f"shard-{k}.log").open("ab") as log:  # the child keeps its own fd
                processes.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "gpufleet",
                        *argv,
                        stdin=asyncio.subprocess.DEVNULL,
                        stdout=log,
                        stderr=log,
                    )
                )
        yield processes
    finally:
        for process in processes:
            if process.returncode is None:
                process.terminate()
        for process in processes:
            try:
                await asyncio.wait_for(process.wait(), SHARD_STOP_S)
            except TimeoutError:
                process.kill()
                await process.wait()


async def run_sharded_demo(
    args: argparse.Namespace, demo: DemoFleet, contract: str, data_dir: Path
) -> int:
    """Everything after the simulated nodes are up; returns the exit status."""
    try:
        nats = await start_nats_server(data_dir / "nats")
    except NatsServerError as exc:
        return fail(str(exc))
    try:
        return await _with_nats(args, demo, contract, data_dir, nats)
    finally:
        await nats.stop()


async def _with_nats(
    args: argparse.Namespace, demo: DemoFleet, contract: str, data_dir: Path, nats: LocalNats
) -> int:
    config = data_dir / "demo-config.toml"
    config.write_text(cluster_config(contract, args.nodes, nats.url), encoding="utf-8")
    targets = data_dir / "demo-targets.json"
    write_targets_file(targets, demo.targets)
    async with shard_processes(args.shards, config, targets, data_dir):
        print(
            f"gpufleet demo: {args.shards} shards publishing to {nats.url}; attach another view"
            f" with: {command_line('watch', '--attach', nats.url)}",
            file=sys.stderr,
        )
        viewer = AttachedFleet(nats.url, read_only=args.read_only, history_dir=data_dir)
        return await watch_attached(
            viewer,
            headless=args.headless,
            theme=args.theme,
            duration_s=args.duration,
            json_out=args.json_out,
        )
