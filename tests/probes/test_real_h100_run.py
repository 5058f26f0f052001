"""The probe suite as it ran on a real H100, judged by the controller's own code.

tests/fixtures/h100/probe-full.jsonl is the program's output (``--suite full``) on a
lent NVIDIA H100 80GB HBM3 (driver 580.159.04, torch 2.11.0+cu130), captured with
``OUT=DIR bash bench/on_gpu.sh``; the second run on the same GPU agreed within 0.2 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.collect import RunCollector
from probes.expected import expected_for, model_of
from probes.messages import decode_line
from probes.report import ProbeReport
from probes.verdicts import DEFAULT_SLOW_FRACTION, judge

CAPTURE = Path(__file__).parents[1] / "fixtures" / "h100" / "probe-full.jsonl"


def real_run() -> ProbeReport:
    collector = RunCollector("h100-01", "full", "python3", clock=lambda: 0.0)
    with CAPTURE.open("rb") as lines:
        for line in lines:
            collector.accept(decode_line(line))
    return collector.report()


def test_a_healthy_h100_passes_every_probe() -> None:
    (judged,) = judge([real_run()])
    assert judged.status == "ok"
    assert judged.model is not None and model_of(judged.model) == "H100 SXM"
    assert judged.verdict_of(0) == "pass"
    measured = {(m.probe, m.metric) for m in judged.measurements}
    assert measured == {
        ("gemm", "bf16"),
        ("gemm", "tf32"),
        ("hbm", "d2d"),
        ("sdc", "max_rel_err"),
        ("pcie", "h2d"),
        ("pcie", "d2h"),
    }


@pytest.mark.parametrize("probe", ["gemm", "hbm", "pcie"])
def test_slow_means_about_a_fifth_below_a_healthy_gpu(probe: str) -> None:
    # The slow line sits between 75 % and 80 % of what a healthy H100 measured: a GPU
    # that lost a quarter of its speed is reported, one within a fifth of it is not.
    report = real_run()
    for m in report.measurements:
        if m.probe != probe:
            continue
        figure = expected_for("H100 SXM", m.probe, m.metric)
        assert figure is not None and m.value is not None
        slow_below = DEFAULT_SLOW_FRACTION * figure.achievable
        assert 0.75 * m.value < slow_below < 0.80 * m.value, (m.metric, m.value, slow_below)
