"""``gpufleet demo --headless``: the real client path over loopback, a JSON verdict file."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path


async def test_headless_demo_writes_per_node_json(tmp_path: Path) -> None:
    out = tmp_path / "demo.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gpufleet", "demo", "--headless", "--nodes", "2",
        "--seed", "1", "--json-out", str(out), "--data-dir", str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    # Stopped with Ctrl-C once both nodes stream (a --duration raced a loaded machine's
    # start-up: the nodes were not streaming yet when it ran out).
    head = await asyncio.wait_for(_read_until(proc, b"nodes 2/2 streaming"), 90)
    proc.send_signal(signal.SIGINT)
    printed, _ = await asyncio.wait_for(proc.communicate(), 90)
    text = (head + printed).decode()
    assert proc.returncode == 0, text
    nodes = json.loads(out.read_text())["nodes"]
    assert [n["name"] for n in nodes] == ["node-001", "node-002"]
    for node in nodes:
        assert node["status"] == "streaming"
        assert isinstance(node["broken"], bool)
        assert [g["index"] for g in node["gpus"]] == list(range(8))
        for gpu in node["gpus"]:
            assert gpu["uuid"].startswith("GPU-")
            assert gpu["verdict"] in ("ok", "warn", "fail", "lost", "unknown")
            assert isinstance(gpu["reasons"], list)

    # The demo records history and leaves its example contract beside it, so the SLA
    # command works on what the demo just saw.
    assert (tmp_path / "data" / "node_states").is_dir()
    assert "committed_nodes = 2" in (tmp_path / "data" / "demo-config.toml").read_text()
    sla = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gpufleet", "sla", "--format", "json",
        "-c", str(tmp_path / "data" / "demo-config.toml"), "--data-dir", str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    report, _ = await asyncio.wait_for(sla.communicate(), 60)
    assert sla.returncode == 0, report.decode()
    claim = json.loads(report)
    assert claim["contract"]["committed_nodes"] == 2
    assert 0 < float(claim["coverage_percent"]) <= 100


async def _read_until(proc: asyncio.subprocess.Process, wanted: bytes) -> bytes:
    """What ``proc`` printed up to and including the first line holding ``wanted``."""
    assert proc.stdout is not None
    seen = b""
    while line := await proc.stdout.readline():
        seen += line
        if wanted in line:
            return seen
    raise AssertionError(f"ended before printing {wanted!r}:\n{seen.decode()}")
