"""An unsure straggler is measured again (bounded) before its verdict is shown.

The probe program here is a stand-in shipped as the probe bundle to a real-shell SSH
node: it prints one ``gemm bf16`` figure per requested GPU, GPU 3's figure following the
``mode`` file in the node's home, and appends each run's ``--gpus`` to ``runs``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import asyncssh
import pytest

from collectors.ssh import NodeTarget, connect_node
from gpufleet.config import ConfigError, parse_config
from probes.bundle import ProbeBundle
from probes.report import ProbeEvent, ProbeMeasurement, ProbeProgress, ProbeReport
from probes.runner import ProbeRunner, ProbeTarget
from probes.settings import ProbeSettings
from tests.hostile.shellnode import options_with_agent, shell_fleet

PROBE = b"""
import json, os, sys
selection = sys.argv[sys.argv.index("--gpus") + 1]
home = os.environ["HOME"]
mode = open(os.path.join(home, "mode")).read().strip()
with open(os.path.join(home, "runs"), "a") as runs:
    runs.write(selection + "\\n")
run = len(open(os.path.join(home, "runs")).read().split())
PEERS = [100.0, 103.0, 97.0, 0.0, 99.0, 102.0, 98.0, 100.5]
SLOW_RUNS = {"noise": 1, "slow": 99, "flaky": 2, "far": 99}[mode]
gpus = list(range(8)) if selection == "all" else [int(g) for g in selection.split(",")]
def figure(gpu):
    if gpu != 3:
        return PEERS[gpu]
    if run > SLOW_RUNS:
        return 100.0
    return 33.0 if mode == "far" else 85.0
def emit(message):
    sys.stdout.write(json.dumps(message) + "\\n")
    sys.stdout.flush()
emit({"type": "hello", "v": 1, "pid": os.getpid(), "pgid": os.getpid(), "python": "3",
      "torch": "stand-in", "cuda": None, "simulated": True, "suite": "quick",
      "gpus": [{"index": g, "name": "Simulated GPU"} for g in gpus]})
for gpu in gpus:
    emit({"type": "result", "probe": "gemm", "metric": "bf16", "gpu": gpu,
          "value": figure(gpu), "unit": "TFLOPS"})
emit({"type": "done", "status": "ok"})
"""


def runner(**settings: str) -> ProbeRunner:
    bundle = ProbeBundle(PROBE, hashlib.sha256(PROBE).hexdigest())
    options = options_with_agent(b"")

    async def connect(target: ProbeTarget) -> asyncssh.SSHClientConnection:
        assert isinstance(target, NodeTarget)
        return await connect_node(target, options)

    return ProbeRunner(connect, ProbeSettings(straggler_repeats=2, **settings), bundle)


@pytest.mark.parametrize(
    ("mode", "runs", "verdict", "confidence", "said"),
    [
        # One unlucky run: measured again, the median of two clears it.
        ("noise", ["all", "3"], "pass", None, None),
        # Slow every time: confirmed by three runs.
        ("slow", ["all", "3", "3"], "straggler", "sure", "sure: 3 of 3 runs below"),
        # Slow twice, then not: the repeats are used up and the verdict says so.
        ("flaky", ["all", "3", "3"], "straggler", "unsure", "unsure: 2 of 3 runs below"),
        # Three times slower than steady peers: one run settles it, no repeat.
        ("far", ["all"], "straggler", "sure", "sure: one run"),
    ],
)
async def test_unsure_stragglers_are_measured_again(
    tmp_path: Path,
    mode: str,
    runs: list[str],
    verdict: str,
    confidence: str | None,
    said: str | None,
) -> None:
    events: list[ProbeEvent] = []
    async with shell_fleet(["node-1"], tmp_path) as shells:
        (tmp_path / "node-1" / "mode").write_text(mode)
        report = await runner().run(shells.target("node-1"), "quick", events.append)
    assert (tmp_path / "node-1" / "runs").read_text().split() == runs
    (gpu3,) = [v for v in report.verdicts if v.gpu == 3]
    assert (gpu3.verdict, gpu3.confidence) == (verdict, confidence)
    if said is not None:
        assert any(said in reason for reason in gpu3.reasons), gpu3.reasons
    assert [v.verdict for v in report.verdicts if v.gpu != 3] == ["pass"] * 7
    repeats = [e for e in events if isinstance(e, ProbeProgress) and e.probe == "repeat"]
    assert len(repeats) == len(runs) - 1
    assert all("measuring GPU 3 again" in e.message for e in repeats)


def peer_report() -> ProbeReport:
    """Another node's run: eight steady GPUs of the same model."""
    figures = [100.0, 103.0, 97.0, 101.0, 99.0, 102.0, 98.0, 100.5]
    return ProbeReport(
        node="node-0",
        suite="quick",
        status="ok",
        started=0.0,
        finished=1.0,
        model="Simulated GPU",
        simulated=True,
        gpus=tuple(range(8)),
        measurements=tuple(
            ProbeMeasurement("node-0", "gemm", "bf16", g, v, "TFLOPS")
            for g, v in enumerate(figures)
        ),
    )


@pytest.mark.parametrize(("peers", "runs"), [((), ["2,3"]), ((peer_report(),), ["2,3", "3"])])
async def test_a_fleet_straggler_is_measured_again_too(
    tmp_path: Path, peers: tuple[ProbeReport, ...], runs: list[str]
) -> None:
    """Two GPUs alone cannot tell a straggler; against a peer node's eight they can."""
    async with shell_fleet(["node-1"], tmp_path) as shells:
        (tmp_path / "node-1" / "mode").write_text("noise")
        probe = runner(gpus="2,3")
        report = await probe.run(shells.target("node-1"), "quick", None, peers)
    assert (tmp_path / "node-1" / "runs").read_text().split() == runs
    assert [v.verdict for v in report.verdicts] == ["pass", "pass"]


def test_the_config_sets_how_often_and_names_a_bad_value() -> None:
    assert parse_config({}).probes.settings().straggler_repeats == 2
    none = parse_config({"probes": {"straggler_repeats": 0}}).probes.settings()
    assert none.straggler_repeats == 0
    with pytest.raises(ConfigError, match=r"probes\.straggler_repeats"):
        parse_config({"probes": {"straggler_repeats": -1}}, source="fleet.toml")
