"""What a probe run produces, as the controller keeps it: frozen, slotted, typed.

A run streams ``ProbeProgress``, ``ProbeMeasurement`` and ``ProbeFailure`` events to
its callback and ends in one ``ProbeReport``. Verdicts (``probes.verdicts``) fill
``ProbeMeasurement.verdict`` and ``ProbeReport.verdicts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# The same four words as fleet.model.ProbeVerdict (probes may not import fleet).
ProbeVerdict = Literal["pass", "slow", "straggler", "fail"]
VERDICT_RANK: dict[ProbeVerdict, int] = {"pass": 0, "straggler": 1, "slow": 2, "fail": 3}
# How sure a straggler verdict is: "sure" when the GPU is far outside the fleet's scatter
# or repeated measurements agree; "unsure" rests on one measurement near the bar.
Confidence = Literal["sure", "unsure"]
RunStatus = Literal["ok", "incomplete", "timeout", "cancelled", "error"]
Suite = Literal["quick", "full"]


@dataclass(frozen=True, slots=True)
class ProbeProgress:
    """``step`` of ``steps`` planned measurements on ``node`` are done."""

    node: str
    probe: str
    gpu: int
    step: int
    steps: int
    message: str = ""

    @property
    def fraction(self) -> float:
        """Progress in [0, 1]."""
        return min(1.0, self.step / self.steps) if self.steps else 0.0


@dataclass(frozen=True, slots=True)
class ProbeMeasurement:
    """One figure of one GPU: ``gemm``/``bf16`` on GPU 3 is 712.4 TFLOPS.

    ``ok`` is false when the probe itself judged the GPU wrong (an ``sdc`` mismatch);
    ``value`` is None when no finite figure came out.
    """

    node: str
    probe: str
    metric: str
    gpu: int
    value: float | None
    unit: str
    ok: bool = True
    detail: str = ""
    stand_in: str | None = None  # set when a CPU stand-in measured it (no GPU)
    verdict: ProbeVerdict | None = None
    reasons: tuple[str, ...] = ()
    confidence: Confidence | None = None  # set on straggler verdicts


@dataclass(frozen=True, slots=True)
class ProbeFailure:
    """A probe (or the whole run, ``probe`` None) failed on some GPUs (all when ``gpus`` is ())."""

    node: str
    code: str  # timeout | probe_failed | nccl_failed | no_torch | no_gpu | cancelled | ...
    message: str
    probe: str | None = None
    gpus: tuple[int, ...] = ()


ProbeEvent = ProbeProgress | ProbeMeasurement | ProbeFailure


@dataclass(frozen=True, slots=True)
class GpuProbeVerdict:
    """A GPU's overall verdict: the worst of its measurements, with every reason."""

    gpu: int
    verdict: ProbeVerdict
    reasons: tuple[str, ...] = ()
    confidence: Confidence | None = None  # for a straggler: how sure (see Confidence)


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """One suite run on one node.

    Attributes:
        node: the node's name.
        suite: ``quick`` or ``full``.
        status: ``ok``, ``incomplete`` (some probe failed or ran out of time),
            ``timeout``, ``cancelled`` or ``error`` (nothing ran; see ``error``).
        started: unix seconds.
        finished: unix seconds.
        model: the GPU model name as the driver reports it (GPU 0), None if unknown.
        simulated: true for a simulated node (kernels ran on the CPU).
        gpus: the probed GPU indices.
        measurements: every figure.
        failures: every error the probe or the runner reported.
        verdicts: one per probed GPU once judged.
        error: why nothing ran (status ``error``), for the operator.
        pgid: the probe's process group on the node (its pid), for diagnostics.
    """

    node: str
    suite: Suite
    status: RunStatus
    started: float
    finished: float
    model: str | None = None
    simulated: bool = False
    gpus: tuple[int, ...] = ()
    measurements: tuple[ProbeMeasurement, ...] = ()
    failures: tuple[ProbeFailure, ...] = ()
    verdicts: tuple[GpuProbeVerdict, ...] = ()
    error: str = ""
    pgid: int | None = None

    def verdict_of(self, gpu: int) -> ProbeVerdict | None:
        """The judged verdict of ``gpu``, None when it was not probed or not judged."""
        for verdict in self.verdicts:
            if verdict.gpu == gpu:
                return verdict.verdict
        return None

    def figure(self, probe: str, metric: str, gpu: int) -> float | None:
        """The value of one measurement, None when absent."""
        for m in self.measurements:
            if (m.probe, m.metric, m.gpu) == (probe, metric, gpu):
                return m.value
        return None
