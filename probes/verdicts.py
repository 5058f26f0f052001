"""Probe verdicts, pure: each figure against its datasheet and against the fleet.

Per measurement:
- ``fail``: the probe judged the GPU wrong (an ``sdc`` mismatch) or gave no figure;
  per GPU also any error, time-out or cancellation that covers it.
- ``slow``: below ``slow_fraction`` of the achievable figure for its model
  (``probes.expected``). CPU and simulated runs have no expected figure: never slow.
- ``straggler``: more than ``straggler_fraction`` below the fleet median of the
  same GPU model, probe and metric (at least two figures needed).
- ``pass`` otherwise. A GPU's verdict is the worst of its measurements
  (fail > slow > straggler > pass), with every reason. A cancelled run judges its
  measurements but gives no GPU a verdict.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence

from probes.expected import EXPECTED_FIGURES, ExpectedFigure, expected_for, model_of
from probes.report import (
    VERDICT_RANK,
    GpuProbeVerdict,
    ProbeMeasurement,
    ProbeReport,
    ProbeVerdict,
)

# Figures where higher is better; the only ones compared with datasheets and peers.
THROUGHPUT_UNITS = frozenset({"TFLOPS", "GB/s"})
DEFAULT_SLOW_FRACTION = 0.8
DEFAULT_STRAGGLER_FRACTION = 0.10
FleetKey = tuple[str | None, str, str]  # (model name, probe, metric)


@dataclasses.dataclass(frozen=True, slots=True)
class _Policy:
    expected: tuple[ExpectedFigure, ...]
    slow_fraction: float
    straggler_fraction: float
    medians: dict[FleetKey, float]


def judge(
    reports: Sequence[ProbeReport],
    expected: Iterable[ExpectedFigure] = EXPECTED_FIGURES,
    *,
    slow_fraction: float = DEFAULT_SLOW_FRACTION,
    straggler_fraction: float = DEFAULT_STRAGGLER_FRACTION,
) -> tuple[ProbeReport, ...]:
    """The reports with every measurement and GPU judged against datasheet and fleet.

    Args:
        reports: one report per node; together they are "the fleet" for stragglers.
        expected: the expected figures per model (default: ``EXPECTED_FIGURES``).
        slow_fraction: below this fraction of the achievable figure is ``slow``.
        straggler_fraction: this far below the fleet median is a ``straggler``.

    Returns:
        New reports, in the same order, with ``verdict``/``reasons`` filled in.
    """
    policy = _Policy(tuple(expected), slow_fraction, straggler_fraction, fleet_medians(reports))
    return tuple(_judge_report(report, policy) for report in reports)


def fleet_medians(reports: Sequence[ProbeReport]) -> dict[FleetKey, float]:
    """Median of each (model, probe, metric) over every usable figure; only groups of two+."""
    groups: dict[FleetKey, list[float]] = defaultdict(list)
    for report in reports:
        for m in report.measurements:
            if m.ok and m.value is not None and m.unit in THROUGHPUT_UNITS:
                groups[(report.model, m.probe, m.metric)].append(m.value)
    return {key: statistics.median(v) for key, v in groups.items() if len(v) >= 2}


def _judge_report(report: ProbeReport, policy: _Policy) -> ProbeReport:
    measurements = tuple(_judge_measurement(report, m, policy) for m in report.measurements)
    if report.status == "cancelled":
        # The operator stopped it: what was measured is judged, but no GPU is.
        return dataclasses.replace(report, measurements=measurements, verdicts=())
    verdicts = tuple(_gpu_verdict(report, gpu, measurements) for gpu in report.gpus)
    return dataclasses.replace(report, measurements=measurements, verdicts=verdicts)


def _judge_measurement(
    report: ProbeReport, m: ProbeMeasurement, policy: _Policy
) -> ProbeMeasurement:
    label = f"{m.probe} {m.metric}"
    if not m.ok or m.value is None:
        return dataclasses.replace(
            m, verdict="fail", reasons=(f"{label}: {m.detail or 'no figure'}",)
        )
    if m.unit not in THROUGHPUT_UNITS:
        return dataclasses.replace(m, verdict="pass", reasons=())
    found: list[tuple[ProbeVerdict, str]] = []
    slow = _slow_reason(report, m, policy)
    if slow:
        found.append(("slow", slow))
    median = policy.medians.get((report.model, m.probe, m.metric))
    if median is not None and m.value < (1.0 - policy.straggler_fraction) * median:
        below = 100.0 * (1.0 - m.value / median)
        found.append(
            (
                "straggler",
                f"{label} {m.value:.3g} {m.unit} is {below:.0f}% below the fleet "
                f"median {median:.3g} for {report.model}",
            )
        )
    verdict = _worst(v for v, _ in found)
    return dataclasses.replace(m, verdict=verdict, reasons=tuple(r for _, r in found))


def _slow_reason(report: ProbeReport, m: ProbeMeasurement, policy: _Policy) -> str | None:
    if report.simulated or m.stand_in or m.value is None:
        return None  # CPU figures have no datasheet to fall short of
    model = model_of(report.model)
    figure = expected_for(model, m.probe, m.metric, policy.expected)
    if figure is None:
        return None
    threshold = policy.slow_fraction * figure.achievable
    if m.value >= threshold:
        return None
    return (
        f"{m.probe} {m.metric} {m.value:.3g} {m.unit} is below {policy.slow_fraction:.0%} of the "
        f"{figure.achievable:.3g} expected on {model}"
    )


def _gpu_verdict(
    report: ProbeReport, gpu: int, measurements: tuple[ProbeMeasurement, ...]
) -> GpuProbeVerdict:
    verdicts: list[ProbeVerdict] = []
    reasons: list[str] = []
    for m in measurements:
        if m.gpu == gpu and m.verdict is not None:
            verdicts.append(m.verdict)
            reasons.extend(m.reasons)
    for failure in report.failures:
        if not failure.gpus or gpu in failure.gpus:
            verdicts.append("fail")
            reasons.append(failure.message)
    return GpuProbeVerdict(gpu=gpu, verdict=_worst(verdicts), reasons=tuple(reasons))


def _worst(verdicts: Iterable[ProbeVerdict]) -> ProbeVerdict:
    return max(verdicts, key=VERDICT_RANK.__getitem__, default="pass")
