"""One ``--json-out`` shape: ``gpufleet demo`` (one collector) writes what an attached view
of shards writes, so the two compare node by node."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from gpufleet.attach import GPU_JSON, PORT_JSON

NODE_KEYS = {
    "name", "verdict", "status", "status_reason", "state", "broken", "broken_reasons",
    "state_since", "last_seen", "expected_gpus", "model", "driver", "cuda", "gpus", "ports",
    "nics", "events",
}  # fmt: skip


async def test_the_single_collectors_json_out_is_the_attached_views_shape(tmp_path: Path) -> None:
    out = tmp_path / "demo.json"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gpufleet", "demo", "--headless", "--nodes", "2",
        "--seed", "1", "--json-out", str(out), "--data-dir", str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    seen = b""
    while b"nodes 2/2 streaming" not in seen:
        line = await asyncio.wait_for(proc.stdout.readline(), 90)
        assert line, seen.decode()
        seen += line
    proc.send_signal(signal.SIGINT)
    printed, _ = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, (seen + printed).decode()
    written = json.loads(out.read_text())
    assert set(written) == {"taken_at", "utilization", "sla", "nodes"}
    assert set(written["utilization"]) == {"now", "avg_1h", "avg_24h"}
    assert written["sla"] is None or written["sla"]["reading"]
    for node in written["nodes"]:
        assert set(node) == NODE_KEYS
        assert node["verdict"] in ("up", "broken", "unreachable", "unmonitored")
        assert [set(g) for g in node["gpus"]] == [set(GPU_JSON)] * 8
        assert all(g["memory_total_bytes"] for g in node["gpus"])  # the simulated H100's
        assert all(set(p) == set(PORT_JSON) for p in node["ports"] + node["nics"])
