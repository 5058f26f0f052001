"""How probes run, as the runner takes it (built from the ``[probes]`` config table)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from probes.expected import EXPECTED_FIGURES, ExpectedFigure
from probes.verdicts import DEFAULT_SLOW_FRACTION, DEFAULT_STRAGGLER_FRACTION


@dataclass(frozen=True, slots=True)
class ProbeSettings:
    """How probes run; built from the ``[probes]`` config table.

    Attributes:
        python: the Python on the nodes that has torch.
        python_by_node: per-node overrides of ``python``.
        timeout_s: the suite's time limit, passed to the probe.
        startup_grace_s: extra time the runner allows for Python and torch to start.
        gpus: ``all`` or indices such as ``0,3``.
        allow_cpu: run on the CPU on a node without GPU (development only).
        slow_fraction: below this fraction of the expected figure is ``slow``.
        straggler_fraction: this far below the fleet median is a ``straggler``.
        straggler_repeats: how many times an ``unsure`` straggler GPU is measured again
            before its verdict is shown (0: never).
        expected: expected figures per GPU model.
    """

    python: str = "python3"
    python_by_node: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 120.0
    startup_grace_s: float = 60.0
    gpus: str = "all"
    allow_cpu: bool = False
    slow_fraction: float = DEFAULT_SLOW_FRACTION
    straggler_fraction: float = DEFAULT_STRAGGLER_FRACTION
    straggler_repeats: int = 2
    expected: tuple[ExpectedFigure, ...] = field(default=EXPECTED_FIGURES, repr=False)

    def python_for(self, node: str) -> str:
        """The probe Python of ``node``."""
        return self.python_by_node.get(node, self.python)
