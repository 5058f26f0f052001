"""Probe verdicts, pure: each figure against its datasheet and against the fleet.

Per measurement:
- ``fail``: the probe judged the GPU wrong (an ``sdc`` mismatch) or gave no figure;
  per GPU also any error, time-out or cancellation that covers it.
- ``slow``: below ``slow_fraction`` of the achievable figure for its model
  (``probes.expected``). CPU and simulated runs have no expected figure: never slow.
- ``straggler``: more than ``straggler_fraction`` below the fleet median of the
  same GPU model, probe and metric (at least two figures needed), *and* an outlier by a
  robust spread: at least ``MIN_ROBUST_Z`` scaled median absolute deviations (MAD) below
  that median. On a busy or noisy host every GPU's figure scatters by 10-20 %; the MAD
  grows with that scatter, so noise is not called a straggler, while one GPU 3x slower
  among steady peers is (its reason gives the robust z and the number of peers: how
  sure). A GPU measured several times (repeats) is compared by the median of its repeats.
  A straggler is ``sure`` when it lies at least ``SURE_ROBUST_Z`` robust deviations
  below the median, or when at least ``CONFIRMING_RUNS`` measurements of it all fall
  below the bar; otherwise ``unsure``, and the runner measures that GPU again
  (``probes.runner``) before the verdict is shown.
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
    Confidence,
    GpuProbeVerdict,
    ProbeMeasurement,
    ProbeReport,
    ProbeVerdict,
)

# Figures where higher is better; the only ones compared with datasheets and peers.
THROUGHPUT_UNITS = frozenset({"TFLOPS", "GB/s"})
DEFAULT_SLOW_FRACTION = 0.8
DEFAULT_STRAGGLER_FRACTION = 0.10
MIN_ROBUST_Z = 3.5  # Iglewicz & Hoaglin's outlier cut-off for the modified z-score
# Far enough outside the fleet's scatter that one measurement settles it (a GPU 3x slower
# among steady peers is far beyond); nearer the bar, repeats must agree.
SURE_ROBUST_Z = 10.0
CONFIRMING_RUNS = 3
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation
FleetKey = tuple[str | None, str, str]  # (model name, probe, metric)
GpuKey = tuple[str, int, str, str]  # (node, GPU, probe, metric)


@dataclasses.dataclass(frozen=True, slots=True)
class FleetSpread:
    """The fleet's figures of one (model, probe, metric): median, robust spread, count."""

    median: float
    sigma: float  # MAD scaled to a standard deviation; 0 when most GPUs agree exactly
    count: int

    def robust_z(self, value: float) -> float:
        """How many robust standard deviations ``value`` lies below the median."""
        gap = self.median - value
        if self.sigma <= 0.0:
            return float("inf") if gap > 0 else 0.0
        return gap / self.sigma


@dataclasses.dataclass(frozen=True, slots=True)
class _Policy:
    expected: tuple[ExpectedFigure, ...]
    slow_fraction: float
    straggler_fraction: float
    spreads: dict[FleetKey, FleetSpread]
    per_gpu: dict[GpuKey, float]  # median of a GPU's repeats
    runs: dict[GpuKey, list[float]]  # every figure of a GPU (its repeats)


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
    runs = gpu_runs(reports)
    per_gpu = {key: statistics.median(values) for key, values in runs.items()}
    spreads = fleet_spreads(reports, per_gpu)
    policy = _Policy(tuple(expected), slow_fraction, straggler_fraction, spreads, per_gpu, runs)
    return tuple(_judge_report(report, policy) for report in reports)


def gpu_runs(reports: Sequence[ProbeReport]) -> dict[GpuKey, list[float]]:
    """Every throughput figure of each GPU per probe and metric, in measurement order."""
    repeats: dict[GpuKey, list[float]] = defaultdict(list)
    for report in reports:
        for m in report.measurements:
            if m.ok and m.value is not None and m.unit in THROUGHPUT_UNITS:
                repeats[(report.node, m.gpu, m.probe, m.metric)].append(m.value)
    return dict(repeats)


def gpu_figures(reports: Sequence[ProbeReport]) -> dict[GpuKey, float]:
    """Each GPU's figure per probe and metric: the median of its repeats."""
    return {key: statistics.median(v) for key, v in gpu_runs(reports).items()}


def unsure_stragglers(report: ProbeReport) -> tuple[int, ...]:
    """The GPUs of a judged report whose straggler verdict is ``unsure``."""
    return tuple(
        v.gpu for v in report.verdicts if v.verdict == "straggler" and v.confidence == "unsure"
    )


def fleet_spreads(
    reports: Sequence[ProbeReport], per_gpu: dict[GpuKey, float] | None = None
) -> dict[FleetKey, FleetSpread]:
    """Median and MAD of each (model, probe, metric) over the GPUs; only groups of two+."""
    per_gpu = gpu_figures(reports) if per_gpu is None else per_gpu
    model = {r.node: r.model for r in reports}
    groups: dict[FleetKey, list[float]] = defaultdict(list)
    for (node, _gpu, probe, metric), value in per_gpu.items():
        groups[(model.get(node), probe, metric)].append(value)
    out = {}
    for key, values in groups.items():
        if len(values) >= 2:
            median = statistics.median(values)
            mad = statistics.median(abs(v - median) for v in values)
            out[key] = FleetSpread(median, MAD_TO_SIGMA * mad, len(values))
    return out


def fleet_medians(reports: Sequence[ProbeReport]) -> dict[FleetKey, float]:
    """Median of each (model, probe, metric) over the GPUs; only groups of two+."""
    return {key: s.median for key, s in fleet_spreads(reports).items()}


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
    straggler = _straggler_reason(report, m, policy)
    confidence: Confidence | None = None
    if straggler:
        confidence, reason = straggler
        found.append(("straggler", reason))
    verdict = _worst(v for v, _ in found)
    return dataclasses.replace(
        m, verdict=verdict, reasons=tuple(r for _, r in found), confidence=confidence
    )


def _straggler_reason(
    report: ProbeReport, m: ProbeMeasurement, policy: _Policy
) -> tuple[Confidence, str] | None:
    key = (report.node, m.gpu, m.probe, m.metric)
    spread = policy.spreads.get((report.model, m.probe, m.metric))
    value = policy.per_gpu.get(key, m.value)
    if spread is None or value is None:
        return None
    bar = (1.0 - policy.straggler_fraction) * spread.median
    if value >= bar:
        return None
    z = spread.robust_z(value)
    if z < MIN_ROBUST_Z:
        return None  # as far from the median as the fleet's own scatter: noise
    below = 100.0 * (1.0 - value / spread.median)
    far = "all peers agree" if z == float("inf") else f"robust z {z:.1f}"
    runs = policy.runs.get(key, [value])
    agreeing = sum(1 for v in runs if v < bar)
    confidence: Confidence = (
        "sure" if z >= SURE_ROBUST_Z or agreeing >= CONFIRMING_RUNS else "unsure"
    )
    measured = "one run" if len(runs) == 1 else f"{agreeing} of {len(runs)} runs below"
    return confidence, (
        f"{m.probe} {m.metric} {value:.3g} {m.unit} is {below:.0f}% below the fleet "
        f"median {spread.median:.3g} for {report.model} ({far}, {spread.count} GPUs; "
        f"{confidence}: {measured})"
    )


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
    confidences: set[Confidence] = set()
    for m in measurements:
        if m.gpu == gpu and m.verdict is not None:
            verdicts.append(m.verdict)
            # Repeats of one figure judge alike: each reason once.
            reasons.extend(r for r in m.reasons if r not in reasons)
            if m.confidence is not None:
                confidences.add(m.confidence)
    for failure in report.failures:
        if not failure.gpus or gpu in failure.gpus:
            verdicts.append("fail")
            reasons.append(failure.message)
    verdict = _worst(verdicts)
    confidence: Confidence | None = None
    if verdict == "straggler":
        confidence = "sure" if "sure" in confidences else "unsure"
    return GpuProbeVerdict(gpu, verdict, tuple(reasons), confidence)


def _worst(verdicts: Iterable[ProbeVerdict]) -> ProbeVerdict:
    return max(verdicts, key=VERDICT_RANK.__getitem__, default="pass")
