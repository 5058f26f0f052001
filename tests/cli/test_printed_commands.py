"""Commands gpufleet prints, and the README's, work as written on a demo's data.

``make demo`` installs into ``.venv/bin``, which is not on ``PATH``: the command the
demo prints when it quits must name that executable, not a bare ``gpufleet``. The
README's block of commands for the demo's data runs here as written, with only the
paths swapped for this test's.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

GPUFLEET = Path(sys.executable).parent / "gpufleet"  # the console script of this venv
README = Path(__file__).parents[2] / "README.md"


def readme_demo_commands() -> list[str]:
    """The lines of the README's sh block marked ``<!-- demo-data``."""
    block = re.search(r"<!-- demo-data[^\n]*\n```sh\n(.*?)```", README.read_text(), re.S)
    assert block is not None, "README.md lost its demo-data block"
    return [line for line in block.group(1).splitlines() if line.strip()]


async def test_the_sla_command_the_demo_prints_runs_as_printed(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # the venv's bin is not on PATH
    proc = await asyncio.create_subprocess_exec(
        str(GPUFLEET), "demo", "--headless", "--nodes", "1", "--duration", "3",
        "--seed", "1", "--data-dir", str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env,
        cwd=tmp_path,
    )  # fmt: skip
    printed, _ = await asyncio.wait_for(proc.communicate(), 120)
    text = printed.decode()
    assert proc.returncode == 0, text
    lines = text.splitlines()
    command = lines[lines.index(next(x for x in lines if "the month's SLA claim:" in x)) + 1]
    assert command.strip().startswith(str(GPUFLEET)), command
    sla = await asyncio.to_thread(
        subprocess.run,
        command.strip() + " --format json",
        shell=True,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert sla.returncode == 0, sla.stderr.decode()
    assert json.loads(sla.stdout)["contract"]["committed_nodes"] == 1

    await asyncio.to_thread(run_readme_block, tmp_path, env)


def run_readme_block(tmp_path: Path, env: dict[str, str]) -> None:
    """Run the README's demo-data commands on ``tmp_path / "data"``; check what they wrote."""
    commands = readme_demo_commands()
    assert len(commands) >= 3
    for line in commands:
        # Placeholders first, real paths last: the checkout itself may live under /tmp/.
        line = (
            line.replace("/tmp/gpufleet-demo", "\0data\0")
            .replace("/tmp/", "\0out\0")
            .replace(".venv/bin/gpufleet", "\0bin\0")
            .replace("\0data\0", str(tmp_path / "data"))
            .replace("\0out\0", f"{tmp_path}/out-")
            .replace("\0bin\0", str(GPUFLEET))
        )
        done = subprocess.run(line, shell=True, capture_output=True, env=env, check=False)
        assert done.returncode == 0, (line, done.stderr.decode())
    written = sorted(p.name for p in tmp_path.glob("out-*"))
    assert written == ["out-claim.html", "out-fleet.json", "out-util.csv"]
    assert "node-001" in (tmp_path / "out-util.csv").read_text()


async def test_the_sharded_demo_prints_commands_runnable_as_printed(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": "/usr/bin:/bin:/usr/sbin"}  # nats-server, not the venv's bin
    data = tmp_path / "data dir"  # a space: printed paths must be quoted
    proc = await asyncio.create_subprocess_exec(
        str(GPUFLEET), "demo", "--shards", "2", "--nodes", "2", "--headless",
        "--data-dir", str(data),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.stdout is not None
    seen = []
    try:  # both nodes streamed through their shards: there is history to claim on
        while not seen or "nodes 2/2 streaming" not in seen[-1]:
            line = await asyncio.wait_for(proc.stdout.readline(), 90)
            assert line, "".join(seen)
            seen.append(line.decode())
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
    rest, _ = await asyncio.wait_for(proc.communicate(), 60)
    text = "".join(seen) + rest.decode()
    assert proc.returncode == 0, text
    attach = re.search(r"attach another view with: (.*)", text)
    assert attach is not None, text
    words = shlex.split(attach.group(1))
    assert words[0] == str(GPUFLEET) and words[1:3] == ["watch", "--attach"], words
    assert words[3].startswith("nats://127.0.0.1:")
    lines = text.splitlines()
    command = lines[lines.index(next(x for x in lines if "the SLA claim:" in x)) + 1].strip()
    assert command.startswith(str(GPUFLEET)), command
    sla = await asyncio.to_thread(
        subprocess.run,
        command + " --format json",
        shell=True,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert sla.returncode == 0, sla.stderr.decode()
    assert json.loads(sla.stdout)["contract"]["committed_nodes"] == 2
