"""The kernels in-process on the CPU: sane figures, planted corruption, simulated slowness."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from probes.kernels import gemm, hbm, pcie, sdc
from probes.kernels.context import Deadline, ProbeContext, ProbeTimeout
from probes.kernels.devices import (
    NoDeviceError,
    discover,
    parse_gpu_selection,
    simulated_faults,
)
from probes.kernels.emit import Emitter
from probes.kernels.suite import SUITES, run_suite


class RecordingEmitter(Emitter):
    """An emitter that keeps its messages instead of writing them to stdout."""

    def __init__(self) -> None:
        super().__init__(fd=-1)
        self.messages: list[dict[str, Any]] = []

    def send(self, kind: str, **fields: Any) -> None:
        self.messages.append({"type": kind, **fields})

    def results(self, probe: str, metric: str | None = None) -> dict[int, dict[str, Any]]:
        return {
            m["gpu"]: m
            for m in self.messages
            if m["type"] == "result" and m["probe"] == probe and metric in (None, m["metric"])
        }


def context(
    faults: dict[str, Any] | None, seconds: float = 60.0
) -> tuple[ProbeContext, RecordingEmitter]:
    torch.set_num_threads(1)
    devices = discover(torch, None, allow_cpu=True, faults=faults)
    emitter = RecordingEmitter()
    return ProbeContext(torch, devices, emitter, Deadline(seconds)), emitter


def test_gemm_on_cpu_gives_plausible_tflops() -> None:
    ctx, out = context(None)
    gemm.run(ctx)
    for metric in ("bf16", "fp32"):
        (figure,) = out.results("gemm", metric).values()
        assert figure["unit"] == "TFLOPS"
        # A CPU core does between a gigaflop and a few teraflops, never more.
        assert 1e-3 < figure["value"] < 5.0


def test_hbm_and_pcie_on_cpu_are_positive_and_the_stand_in_says_so() -> None:
    ctx, out = context(None)
    hbm.run(ctx)
    pcie.run(ctx)
    copy = out.results("hbm", "d2d")[0]
    assert copy["unit"] == "GB/s" and 0.05 < copy["value"] < 5000 and math.isfinite(copy["value"])
    for direction in ("h2d", "d2h"):
        link = out.results("pcie", direction)[0]
        assert link["value"] > 0.05
        assert link["stand_in"] == pcie.STAND_IN


def test_sdc_catches_the_planted_wrong_result_and_only_it() -> None:
    ctx, out = context({"gpus": 3, "sdc": [1]})
    sdc.run(ctx)
    results = out.results("sdc")
    assert [results[g]["ok"] for g in range(3)] == [True, False, True]
    assert results[1]["value"] > 100 * sdc.TOLERANCE
    assert results[0]["value"] < sdc.TOLERANCE
    assert results[0]["differing_peers"] == [1]
    assert results[1]["differing_peers"] == [0, 2]


def test_corrupt_changes_exactly_one_element() -> None:
    out = torch.randn(16, 16)
    before = out.clone()
    sdc.corrupt(torch, out)
    changed = (out != before).nonzero()
    assert len(changed) == 1
    row, col = changed[0].tolist()
    assert abs(float(out[row, col]) - float(before[row, col])) >= abs(float(before[row, col])) / 16


def test_a_slow_factor_really_slows_the_measured_gpu() -> None:
    ctx, out = context({"gpus": 3, "slow": {"2": 4.0}})
    gemm.run(ctx)
    figures = {g: r["value"] for g, r in out.results("gemm", "fp32").items()}
    healthy = min(figures[0], figures[1])
    assert figures[2] < 0.5 * healthy


def test_gpu_selection_and_missing_gpus() -> None:
    assert parse_gpu_selection("all") is None
    assert parse_gpu_selection("3,0,3") == [0, 3]
    with pytest.raises(ValueError):
        parse_gpu_selection("-1")
    picked = discover(torch, [0, 3], allow_cpu=False, faults={"gpus": 4})
    assert [d.index for d in picked] == [0, 3]
    with pytest.raises(ValueError, match="no GPU with index 9"):
        discover(torch, [9], allow_cpu=False, faults={"gpus": 4})


def test_no_gpu_is_an_error_unless_cpu_runs_are_allowed() -> None:
    with pytest.raises(NoDeviceError):
        discover(torch, None, allow_cpu=False, faults=None)
    assert discover(torch, None, allow_cpu=True, faults=None)[0].name == "CPU (no GPU)"


def test_simulated_faults_come_from_the_environment() -> None:
    assert simulated_faults({}) is None
    faults = simulated_faults({"GPUFLEET_SIM_PROBE_FAULTS": '{"gpus": 2, "sdc": [1]}'})
    assert faults == {"gpus": 2, "sdc": [1]}


def test_an_expired_deadline_reports_timeouts_instead_of_figures() -> None:
    ctx, out = context({"gpus": 2}, seconds=-1.0)
    with pytest.raises(ProbeTimeout):
        gemm.run(ctx)
    incomplete = run_suite(ctx, "quick")
    assert incomplete == list(SUITES["quick"])
    errors = [m for m in out.messages if m["type"] == "error"]
    assert {e["probe"] for e in errors} == {"gemm", "hbm", "sdc"}
    assert all(e["code"] == "timeout" for e in errors)


def test_progress_counts_up_to_the_planned_steps() -> None:
    ctx, out = context({"gpus": 2})
    assert run_suite(ctx, "quick") == []
    steps = [m["step"] for m in out.messages if m["type"] == "progress"]
    assert steps == list(range(1, len(steps) + 1))
    assert steps[-1] == ctx.steps
