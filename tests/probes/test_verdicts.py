"""Verdicts, pure: datasheet (slow), fleet median (straggler), failures (fail)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probes.expected import EXPECTED_FIGURES, expected_for, model_of
from probes.report import ProbeFailure, ProbeMeasurement, ProbeReport, RunStatus
from probes.verdicts import MIN_ROBUST_Z, fleet_medians, fleet_spreads, judge

H100 = "NVIDIA H100 80GB HBM3"
SIM = "Simulated GPU (CPU)"


def report(
    node: str,
    figures: dict[int, float],
    *,
    model: str = H100,
    simulated: bool = False,
    probe: str = "gemm",
    metric: str = "bf16",
    unit: str = "TFLOPS",
    failures: tuple[ProbeFailure, ...] = (),
    status: RunStatus = "ok",
) -> ProbeReport:
    measurements = tuple(
        ProbeMeasurement(node, probe, metric, gpu, value, unit) for gpu, value in figures.items()
    )
    return ProbeReport(
        node=node,
        suite="quick",
        status=status,
        started=0.0,
        finished=1.0,
        model=model,
        simulated=simulated,
        gpus=tuple(figures),
        measurements=measurements,
        failures=failures,
    )


def test_names_map_to_the_models_we_hold_figures_for() -> None:
    assert model_of(H100) == "H100 SXM"
    assert model_of("NVIDIA H100 PCIe") == "H100 PCIe"
    assert model_of("NVIDIA H200") == "H200"
    assert model_of("NVIDIA A100-SXM4-80GB") == "A100 80GB SXM"
    assert model_of("NVIDIA B200") == "B200"
    assert model_of("NVIDIA H100 NVL") is None  # no figures: better unjudged than misjudged
    assert model_of(SIM) is None
    assert all(f.source and f.peak > 0 for f in EXPECTED_FIGURES)


def test_below_the_expected_figure_is_slow() -> None:
    figure = expected_for("H100 SXM", "gemm", "bf16")
    assert figure is not None
    threshold = 0.8 * figure.achievable
    (judged,) = judge(
        [report("n1", {0: threshold * 1.01, 1: threshold * 0.99})], straggler_fraction=0.5
    )
    assert judged.verdict_of(0) == "pass"
    assert judged.verdict_of(1) == "slow"
    assert "expected on H100 SXM" in judged.verdicts[1].reasons[0]


def test_more_than_ten_percent_below_the_fleet_median_is_a_straggler() -> None:
    # Figures of healthy H100s (about 805 TFLOPS measured), so none of them is slow.
    fleet = [report("n1", {0: 800.0, 1: 801.0}), report("n2", {0: 802.0, 1: 714.0})]
    judged = {r.node: r for r in judge(fleet)}
    assert fleet_medians(fleet)[(H100, "gemm", "bf16")] == pytest.approx(800.5)
    assert judged["n2"].verdict_of(1) == "straggler"  # 10.8 % below the median
    assert [judged["n1"].verdict_of(g) for g in (0, 1)] == ["pass", "pass"]
    assert judged["n2"].verdict_of(0) == "pass"


def test_nine_percent_below_is_still_a_pass() -> None:
    fleet = [report("n1", {0: 800.0, 1: 800.0, 2: 728.8})]  # 8.9 % below
    assert judge(fleet)[0].verdict_of(2) == "pass"


def test_stragglers_compare_only_gpus_of_the_same_model() -> None:
    fleet = [
        report("n1", {0: 700.0, 1: 700.0}),
        report("n2", {0: 300.0}, model="NVIDIA A100-SXM4-80GB"),
    ]
    judged = judge(fleet, slow_fraction=0.01)
    assert judged[1].verdict_of(0) == "pass"


def test_simulated_runs_are_never_slow_only_stragglers() -> None:
    (judged,) = judge([report("sim", {0: 0.1, 1: 0.1, 2: 0.03}, model=SIM, simulated=True)])
    assert [judged.verdict_of(g) for g in range(3)] == ["pass", "pass", "straggler"]


def test_a_cpu_stand_in_has_no_datasheet_figure() -> None:
    m = ProbeMeasurement("n1", "pcie", "h2d", 0, 0.5, "GB/s", stand_in="host memcpy stand-in")
    stand_in = ProbeReport("n1", "full", "ok", 0.0, 1.0, H100, False, (0,), (m,))
    assert judge([stand_in])[0].verdict_of(0) == "pass"


def test_an_sdc_mismatch_fails_the_gpu() -> None:
    bad = ProbeMeasurement("n1", "sdc", "max_rel_err", 1, 0.07, "rel", ok=False, detail="differs")
    good = ProbeMeasurement("n1", "sdc", "max_rel_err", 0, 3e-7, "rel")
    run = ProbeReport("n1", "quick", "ok", 0.0, 1.0, H100, False, (0, 1), (good, bad))
    judged = judge([run])[0]
    assert (judged.verdict_of(0), judged.verdict_of(1)) == ("pass", "fail")
    assert judged.measurements[1].reasons == ("sdc max_rel_err: differs",)


def test_failures_fail_the_gpus_they_cover() -> None:
    failures = (
        ProbeFailure("n1", "nccl_failed", "all-reduce worker failed on GPU 1", "nccl", (1,)),
    )
    judged = judge([report("n1", {0: 700.0, 1: 700.0, 2: 700.0}, failures=failures)])[0]
    assert [judged.verdict_of(g) for g in range(3)] == ["pass", "fail", "pass"]
    timeout = (ProbeFailure("n1", "timeout", "no complete result within 180s"),)
    judged = judge([report("n1", {0: 700.0, 1: 700.0}, failures=timeout, status="timeout")])[0]
    assert [judged.verdict_of(g) for g in range(2)] == ["fail", "fail"]


def test_fail_outranks_slow_which_outranks_straggler() -> None:
    failure = (ProbeFailure("n1", "probe_failed", "hbm: RuntimeError: CUDA error", "hbm", (0,)),)
    fleet = [report("n1", {0: 100.0, 1: 700.0, 2: 700.0}, failures=failure)]
    judged = judge(fleet)[0]
    assert judged.verdict_of(0) == "fail"
    reasons = judged.verdicts[0].reasons
    assert any("expected" in r for r in reasons) and any("fleet median" in r for r in reasons)


def test_a_cancelled_run_gives_no_gpu_a_verdict() -> None:
    cancelled = report("n1", {0: 700.0, 1: 100.0}, status="cancelled")
    judged = judge([cancelled])[0]
    assert judged.verdicts == ()
    assert judged.measurements[1].verdict == "slow"


@given(st.lists(st.floats(min_value=1.0, max_value=1e4), min_size=2, max_size=24))
def test_a_straggler_is_ten_percent_below_the_median_and_an_outlier(values: list[float]) -> None:
    fleet = [report(f"n{i}", {0: v}, model=SIM, simulated=True) for i, v in enumerate(values)]
    spread = fleet_spreads(fleet)[(SIM, "gemm", "bf16")]
    for judged, value in zip(judge(fleet), values, strict=True):
        far = value < 0.9 * spread.median
        outlier = spread.robust_z(value) >= MIN_ROBUST_Z
        expected = "straggler" if far and outlier else "pass"
        assert judged.verdict_of(0) == expected


def test_noise_on_a_busy_host_is_not_a_straggler() -> None:
    # Eight GPUs scattering 15-17 % around each other (a busy CPU): no outlier, no verdict.
    noisy = {0: 0.100, 1: 0.084, 2: 0.117, 3: 0.085, 4: 0.098, 5: 0.116, 6: 0.083, 7: 0.101}
    (judged,) = judge([report("node-007", noisy, model=SIM, simulated=True)])
    assert [v.verdict for v in judged.verdicts] == ["pass"] * 8


def test_one_gpu_three_times_slower_among_steady_peers_is_a_sure_straggler() -> None:
    steady = {g: 0.100 + 0.001 * g for g in range(7)}
    (judged,) = judge([report("node-006", {**steady, 7: 0.033}, model=SIM, simulated=True)])
    assert judged.verdict_of(7) == "straggler"
    assert [judged.verdict_of(g) for g in range(7)] == ["pass"] * 7
    reason = judged.verdicts[7].reasons[0]
    assert "68% below the fleet median" in reason and "robust z" in reason and "8 GPUs" in reason


def test_repeats_of_one_gpu_are_judged_by_their_median() -> None:
    base = report("n1", {g: 0.1 for g in range(4)}, model=SIM, simulated=True)
    # GPU 3 measured three times: one unlucky repeat does not make it a straggler.
    extra = [dataclasses.replace(base.measurements[3], value=v) for v in (0.05, 0.1)]
    noisy = dataclasses.replace(base, measurements=(*base.measurements, *extra))
    (judged,) = judge([noisy])
    assert judged.verdict_of(3) == "pass"
