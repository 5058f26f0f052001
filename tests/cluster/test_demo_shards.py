"""``gpufleet demo --shards 3 --headless --json-out``: shard processes, NATS, attached view."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from pathlib import Path

import pytest

from cluster.bus import BusError, connect
from tests.cluster.conftest import EXPECTED_STATE, SCENARIO

pytestmark = pytest.mark.e2e


async def read_until(stream: asyncio.StreamReader, marker: str, within_s: float) -> str:
    """Lines of ``stream`` up to the first holding ``marker``; fail after ``within_s``."""
    seen: list[str] = []
    async with asyncio.timeout(within_s):
        while True:
            line = (await stream.readline()).decode()
            assert line, "demo exited early:\n" + "".join(seen[-20:])
            seen.append(line)
            if marker in line:
                return "".join(seen)


async def test_sharded_demo_attaches_and_writes_every_verdict(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    out, data = tmp_path / "demo.json", tmp_path / "data"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gpufleet", "demo", "--shards", "3", "--nodes", "5",
        "--scenario", str(scenario), "--headless", "--json-out", str(out),
        "--data-dir", str(data),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        # The XID 79 event breaks node-002 a tick before its sample shows the GPU lost.
        log = await read_until(proc.stdout, "(1 lost); broken: node-002, node-004, node-005", 90)
        assert "with credentials" in log and "signed summaries" in log
        url = re.search(r"publishing to (nats://\S+)", log)
        assert url is not None
        with pytest.raises(BusError, match="uthorization"):  # no anonymous client
            await connect(url.group(1), "anonymous")
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
    rest, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, rest.decode()

    nodes = {n["name"]: n for n in json.loads(out.read_text())["nodes"]}
    assert {name: n["verdict"] for name, n in nodes.items()} == EXPECTED_STATE
    assert [g["verdict"] for g in nodes["node-002"]["gpus"]].count("lost") == 1
    assert nodes["node-002"]["gpus"][3]["verdict"] == "lost"
    assert "fail" in [p["verdict"] for p in nodes["node-004"]["ports"]]
    # Each shard recorded its own share; the SLA command reads them as one fleet.
    assert sorted(p.name for p in data.glob("shard=*")) == ["shard=1", "shard=2", "shard=3"]
    sla = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gpufleet", "sla", "--format", "json",
        "-c", str(data / "demo-config.toml"), "--data-dir", str(data),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    report, _ = await asyncio.wait_for(sla.communicate(), 60)
    assert sla.returncode == 0, report.decode()
    claim = json.loads(report)
    # Shorter than the demo contract's 1-minute grace: seen, and forgiven.
    seen = {o["node"] for o in claim["outages"] + claim["forgiven_outages"]}
    assert {"node-002", "node-004", "node-005"} <= seen
