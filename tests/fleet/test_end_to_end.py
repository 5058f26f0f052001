"""Real agent output on a simulated node, fed line by line into FleetState.

The agent runs in-process against the simulated NVML library on a clock the test
moves (its waits jump simulated time), so nothing sleeps. Every line it writes is
decoded with the real protocol decoder and ingested as the transport would.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors import sim
from collectors.agent.cli import parse_args
from collectors.agent.main import run
from collectors.agent.wire import Writer
from collectors.protocol import decode_line
from collectors.updates import NodeMessage, NodeStatusChange
from fleet.model import FleetSnapshot, NodeTransition
from fleet.settings.health_section import HealthSection
from fleet.state import FleetState, NodeSpec
from tests.agent.sim_clock import WALL_START, SimClock

NODE = "node-001"


def agent_lines(
    sysfs_root: Path, scenario: str, samples: int, name: str = NODE, start: float | None = None
) -> list[bytes]:
    """What the agent writes for ``samples`` samples of node ``name`` under ``scenario``
    (from ``start`` seconds into it when given)."""
    clock = SimClock()
    if start is not None:
        clock.t = start
    node = sim.install(
        name,
        sim.parse_scenario(scenario, "test"),
        gpus=8,
        sysfs_root=sysfs_root,
        clock=clock.elapsed,
        refresh_s=None,
    )
    clock.node = node
    args = ["--interval", "1", "--slow-interval", "2", "--sysfs-root", str(node.sysfs_root)]
    options = parse_args([*args, "--host", name, "--max-samples", str(samples)])
    stream = io.BytesIO()
    try:
        assert run(options, Writer(stream), clock, inline_events=True) == 0
    finally:
        node.close()
    return stream.getvalue().splitlines()


def feed(lines: list[bytes], state: FleetState) -> float:
    """Ingest every line as the transport would; returns the last message's time."""
    state.ingest(NodeStatusChange(NODE, "streaming", "", WALL_START))
    last = WALL_START
    for line in lines:
        message = decode_line(line)
        last = message.t
        state.ingest(NodeMessage(NODE, message, last))
    return last


def fault(kind: str, at: str, **params: object) -> str:
    lines = ["[[fault]]", f'kind = "{kind}"', f'node = "{NODE}"', f'at = "{at}"']
    lines += [f"{k} = {v!r}".replace("'", '"') for k, v in params.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def sysfs_root(tmp_path: Path) -> Iterator[Path]:
    # The sim rewrites ~100 sysfs files per tick: tmpfs keeps that fast where available.
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path / "sys"
        return
    path = Path(tempfile.mkdtemp(prefix="gpufleet-fleet-test-", dir=shm))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def snapshot_after(sysfs_root: Path, scenario: str, samples: int) -> FleetSnapshot:
    state = FleetState([NodeSpec(NODE)], HealthSection())
    last = feed(agent_lines(sysfs_root, scenario, samples), state)
    return state.snapshot(last)


def test_agent_faults_give_the_documented_verdicts(sysfs_root: Path) -> None:
    scenario = (
        fault("xid79", "2s", gpu=5)
        + fault("ecc_dbe", "2s", gpu=2, xid=48)
        + fault("thermal_slowdown", "2s", gpu=1)
        + fault("ib_link_down", "2s", port=3)
    )
    snap = snapshot_after(sysfs_root, scenario, samples=6)
    node = snap.nodes[0]
    gpus = node.gpus
    assert gpus[5].verdict == "lost"
    assert gpus[2].verdict == "fail"
    assert any(r.startswith("uncorrected ECC (volatile)") for r in gpus[2].reasons)
    assert "XID 48: double-bit ECC error" in gpus[2].reasons
    assert gpus[1].verdict == "warn" and "HW thermal slowdown" in gpus[1].reasons
    assert {g.verdict for i, g in enumerate(gpus) if i not in (1, 2, 5)} == {"ok"}
    port = node.ports[3]
    assert port.verdict == "fail" and port.link_downed_delta == 1
    assert f"{port.name} state DOWN" in port.reasons
    assert node.state == "broken" and "6 of 8 GPUs healthy" in node.broken_reasons
    xids = [(e.gpu, e.code) for e in snap.new_events if e.kind == "xid"]
    assert sorted(xids) == [(2, 48), (5, 79)]


def test_recover_clears_the_node(sysfs_root: Path) -> None:
    scenario = fault("xid79", "2s", gpu=5) + fault("recover", "5s")
    lines = agent_lines(sysfs_root, scenario, samples=9)
    state = FleetState([NodeSpec(NODE)], HealthSection())
    before = [line for line in lines if decode_line(line).t < WALL_START + 4.5]
    during = state.snapshot(feed(before, state)).nodes[0]
    assert (during.gpus[5].verdict, during.state) == ("lost", "broken")
    state = FleetState([NodeSpec(NODE)], HealthSection())
    snap = state.snapshot(feed(lines, state))
    node = snap.nodes[0]
    assert node.gpus[5].verdict == "ok"
    assert node.state == "up"
    assert [t.state for t in snap.transitions] == ["up"]  # first snapshot: initial state only


def test_ticking_snapshots_record_broken_then_up_with_evidence(sysfs_root: Path) -> None:
    scenario = fault("xid79", "2s", gpu=5) + fault("recover", "5s")
    state = FleetState([NodeSpec(NODE)], HealthSection())
    state.ingest(NodeStatusChange(NODE, "streaming", "", WALL_START))
    transitions: list[NodeTransition] = []
    for line in agent_lines(sysfs_root, scenario, samples=9):
        message = decode_line(line)
        state.ingest(NodeMessage(NODE, message, message.t))
        if message.__class__.__name__ == "Sample":
            transitions.extend(state.snapshot(message.t).transitions)
    assert [t.state for t in transitions] == ["up", "broken", "up"]
    # The agent saw the GPU lost before the XID event came through: the evidence says so.
    assert transitions[1].reasons[0] == "GPU 5 lost (NVMLError_GpuIsLost)"


def test_agent_link_and_memory_faults(sysfs_root: Path) -> None:
    scenario = (
        fault("nvlink_crc_storm", "1s", gpu=3, link=2, rate=180)
        + fault("row_remap_failure", "1s", gpu=6)
        + fault("ib_symbol_errors", "1s", port=1, rate=20)
        + fault("ib_degraded_rate", "1s", port=2)
    )
    node = snapshot_after(sysfs_root, scenario, samples=6).nodes[0]
    gpus, ports = node.gpus, node.ports
    assert gpus[3].verdict == "fail"
    assert any(r.startswith("NVLink CRC") and r.endswith("on 1 link") for r in gpus[3].reasons)
    assert gpus[6].verdict == "fail" and "row remap failure" in gpus[6].reasons
    assert ports[1].verdict == "fail" and ports[1].symbol_error_rate == 20.0
    assert ports[2].verdict == "warn"
    assert ports[2].reasons == (f"{ports[2].name} rate 200 Gb/s < expected 400",)
    assert node.state == "broken"
