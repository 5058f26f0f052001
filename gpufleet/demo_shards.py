"""``gpufleet demo --shards N``: a local nats-server, N ``serve --shard`` processes, one view.

The simulated nodes run in this process (as for the plain demo); each shard is a
separate ``gpufleet serve --shard K/N`` process reaching its share of them over SSH
and publishing to the local nats-server; the dashboard (or ``--headless``) attaches
through NATS only. History goes to ``DATA/shard=K``.

The nats-server runs with users and subject permissions (docs/scale-out.md): each
shard logs in as its own user, the dashboard as an operator; the passwords are fresh
each run, in owner-only files under ``DATA/nats-credentials``, and the server's
configuration holds only their bcrypt hashes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from cluster.attach import AttachedFleet
from cluster.auth import NatsAuth
from cluster.nats_users import (
    NatsUser,
    authorization_block,
    hash_password,
    shard_user,
    viewer_user,
)
from cluster.natsd import LocalNats, NatsServerError, start_nats_server
from cluster.signing import ShardKeys, parse_public_key, private_key_pem, public_key_text
from collectors.demo import DemoFleet
from gpufleet.attach import watch_attached
from gpufleet.invocation import command_line
from gpufleet.session import fail
from gpufleet.shard import write_targets_file

SHARD_STOP_S = 20.0


OPERATOR = "operator"


def cluster_config(
    contract: str,
    nodes: int,
    nats_url: str,
    user: str,
    password: Path,
    public_keys: list[str],
    signing_key: Path | None = None,
) -> str:
    """The demo's contract plus the fleet's hosts, the NATS URL, a user and the shards'
    public keys (and a shard's own signing key), as TOML."""
    text = (
        contract
        + f'\n[fleet]\nhosts = ["node-[001-{nodes:03d}]"]\n'
        + f"\n[cluster]\nnats_url = {json.dumps(nats_url)}\n"
        + f"nats_user = {json.dumps(user)}\nnats_password_file = {json.dumps(str(password))}\n"
        + f"shard_public_keys = {json.dumps(public_keys)}\n"
    )
    if signing_key is not None:
        text += f"signing_key_file = {json.dumps(str(signing_key))}\n"
    return text


def make_signing_keys(folder: Path, shards: int) -> tuple[list[Path], list[str]]:
    """A fresh Ed25519 key per shard (owner-only PEM files) and their public keys."""
    paths, public = [], []
    for k in range(1, shards + 1):
        key = Ed25519PrivateKey.generate()
        path = folder / f"shard-{k}.ed25519.pem"
        _write_private(path, private_key_pem(key).decode())
        paths.append(path)
        public.append(public_key_text(key))
    return paths, public


def _write_private(path: Path, text: str) -> None:
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def shard_user_name(k: int) -> str:
    return f"shard-{k}"


def make_credentials(folder: Path, shards: int) -> tuple[str, dict[str, Path]]:
    """Fresh passwords for every shard and the operator: the server's authorization
    block (hashes only) and each user's password file (owner-only)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    users: list[NatsUser] = []
    files: dict[str, Path] = {}
    names = [shard_user_name(k) for k in range(1, shards + 1)] + [OPERATOR]
    for k, name in enumerate(names, start=1):
        password = secrets.token_urlsafe(24)
        path = folder / f"{name}.password"
        _write_private(path, password + "\n")
        files[name] = path
        hashed = hash_password(password)
        users.append(
            viewer_user(name, hashed, operator=True)
            if name == OPERATOR
            else shard_user(name, hashed, k)
        )
    return authorization_block(users), files


@contextlib.asynccontextmanager
async def shard_processes(
    configs: list[Path], targets: Path, data_dir: Path
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Start a shard process per config (shard K of len(configs) reads ``configs[K-1]``);
    SIGTERM them (they flush history) on exit."""
    processes = []
    count = len(configs)
    try:
        for k, config in enumerate(configs, start=1):
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


def attach_command(url: str, viewer_config: Path) -> str:
    """The command that attaches another view to the demo's shards, quoted for a shell."""
    return command_line("watch", "--attach", url, "-c", str(viewer_config))


def demo_viewer(
    url: str,
    password: Path,
    public_keys: list[str],
    data_dir: Path,
    attach: str,
    read_only: bool,
) -> AttachedFleet:
    """The demo's own view: the operator, the shards' keys, and on screen the command that
    attaches another view (the line on stderr is hidden behind the dashboard)."""
    return AttachedFleet(
        url,
        read_only=read_only,
        history_dir=data_dir,
        auth=NatsAuth(user=OPERATOR, password=password.read_text().strip()),
        keys=ShardKeys([parse_public_key(text) for text in public_keys]),
        hints=(f"attach another view with: {attach}",),
    )


async def run_sharded_demo(
    args: argparse.Namespace, demo: DemoFleet, contract: str, data_dir: Path
) -> int:
    """Everything after the simulated nodes are up; returns the exit status."""
    authorization, passwords = make_credentials(data_dir / "nats-credentials", args.shards)
    try:
        nats = await start_nats_server(data_dir / "nats", config=authorization)
    except NatsServerError as exc:
        return fail(str(exc))
    try:
        return await _with_nats(args, demo, contract, data_dir, nats, passwords)
    finally:
        await nats.stop()


async def _with_nats(
    args: argparse.Namespace,
    demo: DemoFleet,
    contract: str,
    data_dir: Path,
    nats: LocalNats,
    passwords: dict[str, Path],
) -> int:
    key_files, public_keys = make_signing_keys(passwords[OPERATOR].parent, args.shards)

    def write_config(name: str, user: str, key: Path | None = None) -> Path:
        path = data_dir / name
        text = cluster_config(
            contract, args.nodes, nats.url, user, passwords[user], public_keys, key
        )
        path.write_text(text, encoding="utf-8")
        return path

    # The operator's: what a second view attaches with, and what `sla` reads.
    viewer_config = write_config("demo-config.toml", OPERATOR)
    configs = [
        write_config(f"demo-shard-{k}.toml", shard_user_name(k), key_files[k - 1])
        for k in range(1, args.shards + 1)
    ]
    targets = data_dir / "demo-targets.json"
    write_targets_file(targets, demo.targets)
    async with shard_processes(configs, targets, data_dir):
        attach = attach_command(nats.url, viewer_config)
        print(
            f"gpufleet demo: {args.shards} shards publishing to {nats.url} with credentials"
            f" (a user per shard and an operator) and signed summaries (a key per shard);"
            f" secrets in {passwords[OPERATOR].parent}, owner-only; attach another view"
            f" with: {attach}",
            file=sys.stderr,
        )
        viewer = demo_viewer(
            nats.url, passwords[OPERATOR], public_keys, data_dir, attach, args.read_only
        )
        return await watch_attached(
            viewer,
            headless=args.headless,
            theme=args.theme,
            duration_s=args.duration,
            json_out=args.json_out,
        )
