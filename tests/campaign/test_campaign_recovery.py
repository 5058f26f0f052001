"""A hanging fabric ends by the step timeout; a controller killed mid-soak resumes.

Real SSH on loopback and real CPU torch (gloo), as in test_campaign_loopback.py.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from campaign.fabric_launch import KILL_GRACE_S, FabricLauncher, FabricOptions
from campaign.ladder import Ladder
from collectors.ssh import NodeTarget, SshOptions, connect_node
from gpufleet.accept_campaign import accept
from gpufleet.config import parse_config
from testkit.loopback import LoopbackFleet

OPTIONS = SshOptions(connect_timeout=5.0, ssh_config=None)
pytestmark = pytest.mark.timeout(600)
# The hung step lasts this long. A healthy step's clock starts on each node once torch is
# loaded there; its all-reduce of 16 KiB takes well under a second, so this leaves the
# pair's members many seconds of difference in torch's load time.
STEP_TIMEOUT_S = 15.0
REPO = Path(__file__).resolve().parents[2]
CONFIG = {
    "contract": {"gpus_per_node": 2},
    "probes": {"probe_python": sys.executable, "suite": "quick", "straggler_repeats": 0},
    "acceptance": {"straggler_fraction": 0.5, "step_timeout_s": 120.0},
}


def fabric_options(targets: list[NodeTarget], step_timeout_s: float) -> FabricOptions:
    return FabricOptions(
        python_for={t.name: sys.executable for t in targets},
        step_timeout_s=step_timeout_s,
        gpus_per_node=2,
        bytes=1 << 14,
        iters=2,
        gemm=1,
    )


def fabric_processes() -> list[int]:
    """Pids of fabric node processes and ranks still alive on this machine."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"--nccl-worker" in cmdline and b'"fabric"' in cmdline:
            found.append(int(entry.name))
    return found


async def test_a_hanging_node_ends_by_the_step_timeout_and_is_isolated(tmp_path: Path) -> None:
    # The hanging node is the second of its pair: the bisection runs the first with a
    # healthy peer (ok), so the hang is named after one step timeout, not two.
    path = tmp_path / "hang.toml"
    path.write_text(
        'gpus = 2\n[[fault]]\nkind = "fabric_hang"\nnode = "node-004"\nat = "0s"\n',
        encoding="utf-8",
    )
    async with LoopbackFleet(4, gpus=2, mode="agent", scenario=path) as fleet:
        targets = fleet.targets()
        launcher_options = fabric_options(targets, STEP_TIMEOUT_S)
        launcher = FabricLauncher(targets, lambda t: connect_node(t, OPTIONS), launcher_options)
        try:
            result = await Ladder(launcher.run_step, 0.8, None).run([t.name for t in targets])
        finally:
            await launcher.close()
        left = fabric_processes()
    assert set(result.culprits) == {"node-004"}
    assert result.culprits["node-004"].cause == "fabric_hang"
    hung = [s for s in result.steps if s.status == "hung"]
    assert [s.nodes for s in hung] == [("node-003", "node-004")]
    bisected = [s for s in result.steps if s.purpose == "bisect"]
    assert [(s.nodes, s.status) for s in bisected] == [(("node-003", "node-001"), "ok")]
    # Ended by the step timeout (counted once torch is loaded, within the start-up grace),
    # never left hanging.
    bound = STEP_TIMEOUT_S + launcher_options.startup_grace_s + KILL_GRACE_S
    assert all(STEP_TIMEOUT_S <= s.seconds < bound for s in hung), [s.seconds for s in hung]
    assert [s.status for s in result.steps if "node-004" not in s.nodes] == ["ok"] * (
        len(result.steps) - len(hung)
    )
    assert left == []


CHILD = """
import asyncio, json, sys
from collectors.ssh import NodeTarget, SshOptions
from gpufleet.accept_campaign import accept
from gpufleet.config import parse_config
from campaign.fabric_launch import FabricOptions

spec = json.loads(sys.argv[1])
targets = [NodeTarget(**{**t, "identity_files": tuple(t["identity_files"]),
                          "agent_args": tuple(t["agent_args"])}) for t in spec["targets"]]
fabric = FabricOptions(**spec["fabric"])

def on_change(state):
    if any(t.what == "soak-start" for t in state.timeline):
        print("soaking", flush=True)

asyncio.run(accept(parse_config(spec["config"]), targets,
                   SshOptions(connect_timeout=5.0, ssh_config=None),
                   __import__("pathlib").Path(spec["data_dir"]), spec["soak_s"],
                   fabric=fabric, probe_concurrency=2, on_change=on_change,
                   out=sys.stderr))
"""


def child_spec(targets: list[NodeTarget], data_dir: Path, soak_s: float) -> str:
    fabric = fabric_options(targets, 120.0)
    rows = []
    for t in targets:
        row: dict[str, Any] = {k: getattr(t, k) for k in NodeTarget.__dataclass_fields__}
        assert isinstance(row["known_hosts"], str)
        rows.append(row)
    return json.dumps(
        {
            "targets": rows,
            "config": CONFIG,
            "data_dir": str(data_dir),
            "soak_s": soak_s,
            "fabric": {
                "python_for": dict(fabric.python_for),
                "step_timeout_s": fabric.step_timeout_s,
                "gpus_per_node": 2,
                "bytes": fabric.bytes,
                "iters": fabric.iters,
                "gemm": fabric.gemm,
            },
        }
    )


async def test_sigkill_mid_soak_then_resume_gives_a_complete_honest_report(
    tmp_path: Path,
) -> None:
    data_dir, soak_s = tmp_path / "data", 5.0
    healthy = tmp_path / "healthy.toml"
    healthy.write_text("gpus = 2\n", encoding="utf-8")  # the default scenario is for 8 GPUs
    async with LoopbackFleet(2, gpus=2, mode="agent", scenario=healthy) as fleet:
        targets = fleet.targets()
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CHILD,
            child_spec(targets, data_dir, soak_s),
            stdout=asyncio.subprocess.PIPE,
            cwd=REPO,
        )
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), 400.0)
        assert line.strip() == b"soaking"
        os.kill(child.pid, signal.SIGKILL)
        await child.wait()
        killed_at = time.time()
        status = await accept(
            parse_config(CONFIG),
            targets,
            OPTIONS,
            data_dir,
            soak_s,
            fabric=fabric_options(targets, 120.0),
            probe_concurrency=2,
            out=io.StringIO(),
        )
    report = json.loads((data_dir / "campaign" / "report.json").read_text(encoding="utf-8"))
    assert status == 0, report["nodes"]
    assert report["complete"] and report["summary"]["accepted"] == 2
    (gap,) = report["soak"]["gaps"]
    assert gap["from"] <= killed_at <= gap["to"]
    assert report["soak"]["monitored_s"] == soak_s
    stages = [t["what"] for t in report["timeline"]]
    # Stages done before the kill are not run again; the gap sits before the soak ends.
    assert stages.count("probes") == 1 and stages.count("fabric") == 1
    assert stages.index("gap") < stages.index("soak")
