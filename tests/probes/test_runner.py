"""The runner over real SSH to simulated loopback nodes: results, errors, timeout, cancel."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from probes.report import ProbeEvent, ProbeMeasurement, ProbeProgress
from probes.runner import ProbeRunner
from tests.runtime.waits import wait_until

from .conftest import ENDLESS, group_members, process_running, sim_fleet

MakeRunner = Callable[..., ProbeRunner]

# The system Python of the development and CI images has no torch (checked in a test).
NO_TORCH_PYTHON = "/usr/bin/python3"


async def test_a_quick_suite_streams_progress_and_judges_each_gpu(
    tmp_path: Path, make_runner: MakeRunner
) -> None:
    async with sim_fleet(tmp_path, nodes=1, gpus=2, sdc={"node-001": [1]}) as fleet:
        (target,) = fleet.targets()
        events: list[ProbeEvent] = []
        report = await make_runner().run(target, "quick", events.append)
    assert report.status == "ok", report.error
    assert report.simulated and report.gpus == (0, 1)
    progress = [e for e in events if isinstance(e, ProbeProgress)]
    assert progress and progress[-1].fraction == 1.0
    assert any(isinstance(e, ProbeMeasurement) and e.probe == "gemm" for e in events)
    assert report.verdict_of(0) == "pass"
    assert report.verdict_of(1) == "fail"
    assert (report.figure("gemm", "bf16", 0) or 0) > 0


async def test_a_slow_gpu_is_a_straggler_among_its_fleet(
    tmp_path: Path, make_runner: MakeRunner
) -> None:
    slow = {"node-002": {1: 3.0}}
    async with sim_fleet(tmp_path, nodes=3, gpus=2, slow=slow) as fleet:
        # The kernels run on this shared CPU, where a neighbour's load can cost a healthy
        # "GPU" 15 % (the noise the straggler rule must survive on real, busy fleets); the
        # simulated GPU is 3x slow (67 % below), so a 50 % bar tells them apart.
        # One node at a time: three probes at once on two cores would slow each other.
        runner = make_runner(straggler_fraction=0.5)
        targets = fleet.targets()
        reports = await runner.run_fleet(targets, "quick", concurrency=1)
    assert [r.node for r in reports] == ["node-001", "node-002", "node-003"]
    judged = {r.node: r for r in reports}
    assert judged["node-002"].verdict_of(1) == "straggler"
    reasons = next(v.reasons for v in judged["node-002"].verdicts if v.gpu == 1)
    # Which throughput metric crosses the bar first (GEMM bf16/tf32, HBM) varies with the
    # CPU's load; that the slow GPU is called out against the median, and nothing else, not.
    assert any("below the fleet median" in r for r in reasons), reasons
    stragglers = {
        (r.node, v.gpu) for r in judged.values() for v in r.verdicts if v.verdict == "straggler"
    }
    assert stragglers == {("node-002", 1)}


async def test_a_python_without_torch_gives_the_documented_error(
    tmp_path: Path, make_runner: MakeRunner
) -> None:
    async with sim_fleet(tmp_path) as fleet:
        (target,) = fleet.targets()
        report = await make_runner(python=NO_TORCH_PYTHON).run(target)
    assert report.status == "error"
    assert report.error == (
        f"probe_python '{NO_TORCH_PYTHON}' on node-001 has no torch: "
        "install torch there or set [probes] probe_python"
    )


async def test_a_missing_python_is_named(tmp_path: Path, make_runner: MakeRunner) -> None:
    async with sim_fleet(tmp_path) as fleet:
        (target,) = fleet.targets()
        report = await make_runner(python="/nonexistent/python3").run(target)
    assert report.status == "error"
    assert "probe_python '/nonexistent/python3' was not found on node-001" in report.error


async def test_an_unreachable_node_is_a_report_not_an_exception(
    tmp_path: Path, make_runner: MakeRunner
) -> None:
    async with sim_fleet(tmp_path) as fleet:
        (target,) = fleet.targets()
        await fleet.stop_node("node-001")
        report = await make_runner().run(target)
    assert report.status == "error" and report.error.startswith("node-001: ")


async def test_cancel_kills_the_probe_process_group(
    tmp_path: Path, make_runner: MakeRunner
) -> None:
    # GPU 0 finishes a trial (the first progress event), then GPU 1 never does.
    async with sim_fleet(tmp_path, gpus=2, slow={"node-001": {1: ENDLESS}}) as fleet:
        (target,) = fleet.targets()
        runner = make_runner()
        measuring = asyncio.Event()

        def on_event(event: ProbeEvent) -> None:
            measuring.set()

        run = asyncio.create_task(runner.run(target, "full", on_event))
        await asyncio.wait_for(measuring.wait(), 60)
        assert runner.busy("node-001")
        assert runner.cancel("node-001")
        report = await asyncio.wait_for(run, 30)
        execs = fleet.nodes["node-001"].execs
    assert report.status == "cancelled" and report.pgid is not None
    assert execs == 2  # the probe, then the kill over a second channel
    await wait_until(lambda: not process_running(report.pgid or 0), within_s=10)
    assert group_members(report.pgid) == []
    assert not runner.busy("node-001") and not runner.cancel("node-001")


async def test_the_runner_enforces_the_time_limit_itself(
    tmp_path: Path, make_runner: MakeRunner
) -> None:
    # A probe Python that drops --timeout: only the runner's own limit can end it.
    wrapper = tmp_path / "deaf-python"
    # Its arguments are -c BOOTSTRAP BUNDLE SHA256 and the probe's flags: keep the first
    # four (the hash-checked start) and swap the flags for a 600 s limit.
    wrapper.write_text(
        f'#!/bin/sh\nexec {sys.executable} "$1" "$2" "$3" "$4" --suite quick --timeout 600\n'
    )
    wrapper.chmod(0o755)
    async with sim_fleet(tmp_path, gpus=1, slow={"node-001": {0: ENDLESS}}) as fleet:
        (target,) = fleet.targets()
        # The grace covers importing torch on a loaded CI machine: without the probe's
        # hello the report has no GPUs to fail (seen at load 9 with 3 s).
        runner = make_runner(python=str(wrapper), timeout_s=2.0, startup_grace_s=10.0)
        report = await asyncio.wait_for(runner.run(target), 60)
    assert report.status == "timeout"
    assert report.verdict_of(0) == "fail"
    assert report.pgid is not None
    await wait_until(lambda: group_members(report.pgid or 0) == [], within_s=10)


def test_the_system_python_really_lacks_torch() -> None:
    probe = subprocess.run([NO_TORCH_PYTHON, "-c", "import torch"], capture_output=True)
    assert probe.returncode != 0 and b"No module named 'torch'" in probe.stderr
