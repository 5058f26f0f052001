"""A whole campaign over real SSH on loopback: 6 simulated nodes with 2 GPUs each.

The kernels really run (CPU torch, gloo): a slow GPU really measures slower, a slow
fabric node really holds every all-reduce back, a hanging one never all-reduces.
Six nodes are the fewest that prove every stage: one rejected at each of inventory,
probes and soak, and four reaching the fabric, so that its pair round has a healthy
pair beside the slow node's pair to set the bar, and the soak still has two nodes to
all-reduce besides the faulty one.
"""

from __future__ import annotations

import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from campaign.engine import StateListener
from campaign.fabric_launch import FabricOptions
from campaign.model import CampaignState
from collectors.ssh import SshOptions
from gpufleet.accept_campaign import accept
from gpufleet.config import parse_config
from testkit.loopback import LoopbackFleet

OPTIONS = SshOptions(connect_timeout=5.0, ssh_config=None)
# Six nodes' probes and ladder on two shared cores take minutes, not seconds.
pytestmark = pytest.mark.timeout(600)


def config(step_timeout_s: float = 60.0) -> Any:
    return parse_config(
        {
            "contract": {"gpus_per_node": 2},
            "probes": {
                "probe_python": sys.executable,
                "suite": "quick",
                "straggler_repeats": 0,
            },
            # The kernels share two busy cores: a healthy "GPU" can lose 15 % to a
            # neighbour; the slow GPU is 4x slow (75 % below), so a 50 % bar tells them apart.
            "acceptance": {"straggler_fraction": 0.5, "step_timeout_s": step_timeout_s},
        }
    )


def fabric(nodes: list[str], step_timeout_s: float) -> FabricOptions:
    return FabricOptions(
        python_for={n: sys.executable for n in nodes},
        step_timeout_s=step_timeout_s,
        gpus_per_node=2,
        # The figure is simulated (50 GB/s over the slowest member's factor): the
        # all-reduce only has to run, so it moves as little as the recovery test's.
        bytes=1 << 14,
        iters=2,
        gemm=1,
    )


def scenario(tmp_path: Path, faults: list[str]) -> Path:
    path = tmp_path / "accept.toml"
    path.write_text("gpus = 2\n" + "".join(faults), encoding="utf-8")
    return path


def fault(kind: str, node: str, **params: Any) -> str:
    lines = ["[[fault]]", f'kind = "{kind}"', f'node = "{node}"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in params.items()]
    return "\n".join(lines) + "\n"


async def run_campaign(
    fleet: LoopbackFleet,
    data_dir: Path,
    soak_s: float,
    step_timeout_s: float = 60.0,
    on_change: StateListener | None = None,
) -> tuple[int, dict[str, Any], str]:
    targets = fleet.targets()
    out = io.StringIO()
    status = await accept(
        config(step_timeout_s),
        targets,
        OPTIONS,
        data_dir,
        soak_s,
        fabric=fabric([t.name for t in targets], step_timeout_s),
        probe_concurrency=2,
        on_change=on_change,
        out=out,
    )
    report = json.loads((data_dir / "campaign" / "report.json").read_text(encoding="utf-8"))
    junit = (data_dir / "campaign" / "report.xml").read_text(encoding="utf-8")
    return status, report, junit


def rejected(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        n["name"]: (n["stage"], n["evidence"][0]["cause"])
        for n in report["nodes"]
        if n["status"] == "rejected"
    }


class XidAtSoak:
    """Schedules an XID 48 on ``node`` 20 seconds into the soak.

    The simulated agent reads its faults when it starts: the fault is added to the
    scenario and the node's connections dropped, so its agent restarts with it, as a
    node whose GPU faults mid-soak (the campaign's own steps reconnect).
    """

    def __init__(self, fleet: LoopbackFleet, scenario: Path, node: str) -> None:
        self._fleet, self._scenario, self._node = fleet, scenario, node
        self.scheduled_at: int | None = None

    def __call__(self, state: CampaignState) -> None:
        soaking = any(t.what == "soak-start" for t in state.timeline)
        if not soaking or self.scheduled_at is not None:
            return
        simulation = self._fleet.simulation
        assert simulation is not None
        # Room for the agent to restart and register for events on a busy machine: NVML
        # does not deliver an event that happened before registration.
        at = int(simulation.elapsed) + 20
        extra = fault("ecc_dbe", self._node, gpu=1, xid=48, at=f"{at}s")
        with self._scenario.open("a", encoding="utf-8") as handle:
            handle.write(extra)
        self.scheduled_at = at
        self._fleet.nodes[self._node].drop_connections()


async def test_each_fault_is_rejected_at_its_stage(tmp_path: Path) -> None:
    faults = [
        fault("gpu_missing", "node-002", gpu=1, at="0s"),
        fault("slow_gpu", "node-004", gpu=0, factor=4.0, at="0s"),
        fault("slow_fabric", "node-005", factor=8.0, at="0s"),
    ]
    path = scenario(tmp_path, faults)
    async with LoopbackFleet(6, gpus=2, mode="agent", scenario=path) as fleet:
        xid = XidAtSoak(fleet, path, "node-006")
        status, report, junit = await run_campaign(
            fleet, tmp_path / "data", soak_s=30.0, step_timeout_s=120.0, on_change=xid
        )
    assert xid.scheduled_at is not None
    assert rejected(report) == {
        "node-002": ("inventory", "gpu_count"),
        "node-004": ("probes", "straggler"),
        "node-005": ("fabric", "fabric_slow"),
        "node-006": ("soak", "xid_48"),
    }, json.dumps([report["nodes"], report["timeline"], report["fabric"]], indent=1)
    assert status == 1
    # Four nodes reach the fabric: two pairs run as one round, then every other step is
    # a round of its own (the bisection, the rung of all three healthy nodes);
    # log2(4) + 2 rounds at most.
    fabric_steps = [s for s in report["fabric"]["steps"] if s["purpose"] != "soak"]
    assert all(len(s["nodes"]) == 2 for s in fabric_steps[:2])
    assert 1 + len(fabric_steps) - 2 <= 2 + 2
    soaked = {n for s in report["fabric"]["steps"] if s["purpose"] == "soak" for n in s["nodes"]}
    assert soaked == {"node-001", "node-003", "node-006"}
    failed = {
        c.get("name")
        for c in ET.fromstring(junit).iter("testcase")
        if c.find("failure") is not None
    }
    assert failed == {"node-002", "node-004", "node-005", "node-006"}
