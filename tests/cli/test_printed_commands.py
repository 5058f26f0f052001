"""Commands gpufleet prints work as printed, from the gpufleet actually running.

``make demo`` installs into ``.venv/bin``, which is not on ``PATH``: the command the
demo prints when it quits must name that executable, not a bare ``gpufleet``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

GPUFLEET = Path(sys.executable).parent / "gpufleet"  # the console script of this venv


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
