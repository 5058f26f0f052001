"""``gpufleet serve`` against a hostile node: records the good node's XID, stops cleanly.

The real command in a subprocess, over real SSH to two shell nodes. The "bad" node's
Python is a fake that sends the issue's minimal line after every hello (a node
repeating its garbage on every reconnect); the "good" node's reports XID 48. On
SIGTERM serve exits 0 without a traceback, and the good event is on disk.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import polars as pl

from tests.hostile.agents import hostile_agent
from tests.hostile.shellnode import ShellFleet, shell_fleet

ROOT = Path(__file__).resolve().parents[2]
HOSTS = {"good": "localhost", "bad": "127.0.0.1"}  # two names for loopback, one per node


def _fake_python(path: Path, role: str) -> Path:
    """An executable that ignores the controller's command and plays ``role``."""
    path.write_text(
        f"#!{sys.executable}\nimport sys\nsys.argv = [sys.argv[0], '--role', {role!r}]\n"
        + hostile_agent().decode()
    )
    path.chmod(0o755)
    return path


def _config(tmp_path: Path, fleet: ShellFleet) -> Path:
    key = fleet.host_key.export_public_key("openssh").decode().strip()
    known = tmp_path / "known_hosts"
    known.write_text(
        "".join(f"[{host}]:{fleet.nodes[role].port} {key}\n" for role, host in HOSTS.items())
    )
    overrides = "".join(
        f'[fleet.overrides."{host}"]\nport = {fleet.nodes[role].port}\n'
        f'python = "{_fake_python(tmp_path / f"python-{role}", role)}"\n'
        for role, host in HOSTS.items()
    )
    config = tmp_path / "fleet.toml"
    config.write_text(
        f'[fleet]\nhosts = ["localhost", "127.0.0.1"]\nidentity_file = "{fleet.client_key_path}"\n'
        f'known_hosts = "{known}"\ninterval = 0.2\nslow_interval = 1.0\nexpected_gpus = 1\n'
        f"connect_timeout = 10.0\nbackoff_cap = 1.0\n\n{overrides}"
        f"\n[history]\nflush_interval_s = 1.0\n"
    )
    return config


async def _read_until(stream: asyncio.StreamReader, seen: list[str], *needles: str) -> None:
    deadline = time.monotonic() + 60
    while not all(any(n in line for line in seen) for n in needles):
        line = await asyncio.wait_for(stream.readline(), max(0.1, deadline - time.monotonic()))
        if not line:
            raise AssertionError("serve ended early:\n" + "".join(seen[-20:]))
        seen.append(line.decode(errors="replace"))


async def test_serve_records_the_good_event_and_stops_cleanly(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with shell_fleet(list(HOSTS), tmp_path) as fleet:
        config = _config(tmp_path, fleet)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
        args = ["-m", "gpufleet", "serve", "-c", str(config), "--data-dir", str(data)]
        serve = await asyncio.create_subprocess_exec(
            sys.executable, *args, "--metrics-addr", "127.0.0.1:0",
            stderr=asyncio.subprocess.PIPE, env=env,
        )  # fmt: skip
        assert serve.stderr is not None
        seen: list[str] = []
        try:
            await _read_until(serve.stderr, seen, "code=48", "protocol error")
            # The bad node reconnects and repeats itself meanwhile: give it a few rounds.
            await _read_until(serve.stderr, seen, "every node tried")
        finally:
            serve.send_signal(signal.SIGTERM)
            _, rest = await asyncio.wait_for(serve.communicate(), 60)
        seen.extend(rest.decode(errors="replace").splitlines(keepends=True))

    log = "".join(seen)
    assert serve.returncode == 0, log[-3000:]
    assert "Traceback" not in log and "tick failed" not in log
    assert sum("protocol error" in line for line in seen) == 1
    events = pl.read_parquet(list((data / "events").rglob("*.parquet")))
    assert events.filter((pl.col("node") == "localhost") & (pl.col("code") == 48)).height >= 1
    assert events.filter(pl.col("node") == "127.0.0.1").height == 0
