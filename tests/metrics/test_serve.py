"""``gpufleet serve`` end to end: a simulated node over loopback SSH, scraped by Prometheus.

The node runs the real agent on the simulator (collectors/demo, through
testkit.loopback); GPU 3 falls off the bus (XID 79) 9 s in. ``gpufleet serve``
runs as its own process, as under systemd, and must exit 0 on SIGTERM with its history
flushed.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import re
import signal
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

from testkit.loopback.fleet import LoopbackFleet
from tests.metrics.prom import running_prometheus

NODE = "127.0.0.1"  # the config's host: the name the controller gives the node
SIM_NODE = "node-001"  # the simulator's name for the same node
# The fault fires once `gpufleet serve` has started and its agent streams: NVML (and the
# simulator) report no XID that happened before the agent registered for events.
SCENARIO = f"""
gpus = 8

[[fault]]
kind = "xid79"
node = "{SIM_NODE}"
gpu = 3
at = "9s"
"""


def _config(lf: LoopbackFleet) -> str:
    fleet = {
        "hosts": [NODE],
        "port": lf.nodes[SIM_NODE].port,
        "user": getpass.getuser(),
        "identity_file": lf.client_key_path,
        "known_hosts": lf.known_hosts,
        "python": sys.executable,
        "interval": 0.5,
        "slow_interval": 1.0,
        "connect_timeout": 5.0,
    }
    lines = [f"{key} = {json.dumps(value)}" for key, value in fleet.items()]
    return "[fleet]\n" + "\n".join(lines) + "\n"


class ServeProcess:
    """A running ``gpufleet serve`` whose stderr log lines are collected as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.listening = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            line = raw.decode().rstrip()
            self.lines.append(line)
            found = re.search(r"url=http://([\d.]+:\d+)/metrics", line)
            if found and not self.listening.done():
                self.listening.set_result(found.group(1))
        if not self.listening.done():
            self.listening.set_exception(AssertionError("\n".join(self.lines)))

    async def stop(self) -> int:
        """SIGTERM, then the exit status (killed after 30 s, which fails the test)."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            status = await self.process.wait()
        await self._reader
        return status


@contextlib.asynccontextmanager
async def serving(config: Path, data_dir: Path) -> AsyncIterator[ServeProcess]:
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "gpufleet", "serve", "-c", str(config)),
        *("--metrics-addr", "127.0.0.1:0", "--data-dir", str(data_dir)),
        stderr=asyncio.subprocess.PIPE,
    )
    serve = ServeProcess(process)
    try:
        yield serve
    finally:
        await serve.stop()


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


async def test_serve_exposes_a_simulated_fleet_and_stops_cleanly(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    async with LoopbackFleet([SIM_NODE], gpus=8, scenario=scenario, seed=3) as lf:
        config = tmp_path / "gpufleet.toml"
        config.write_text(_config(lf))
        async with serving(config, tmp_path / "data") as serve:
            target = await asyncio.wait_for(serve.listening, 60)
            async with running_prometheus([target], tmp_path) as prom:
                lost = await prom.wait_for(
                    'gpufleet_gpu_verdict{verdict="lost"} == 1', bool, within=60
                )
                assert [(r["metric"]["node"], r["metric"]["gpu"]) for r in lost] == [(NODE, "3")]
                broken = await prom.wait_for("gpufleet_node_broken == 1", bool)
                assert [r["metric"]["node"] for r in broken] == [NODE]
                gpus = await prom.query("count(count by (uuid) (gpufleet_gpu_verdict))")
                assert gpus[0]["value"][1] == "8"
                xid = await prom.wait_for('gpufleet_gpu_xid_errors_total{xid="79"} >= 1', bool)
                assert xid[0]["metric"]["gpu"] == "3"
            assert await asyncio.to_thread(_get, f"http://{target}/-/ready") == 200
            status = await serve.stop()
    assert status == 0, "\n".join(serve.lines)
    assert any('msg="node state"' in line and "state=broken" in line for line in serve.lines)
    assert serve.lines[-1].endswith("msg=stopped")
    assert list((tmp_path / "data" / "node_states").rglob("*.parquet")), "history not flushed"
