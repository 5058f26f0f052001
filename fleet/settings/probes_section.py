"""[probes] node probes (docs/probes.md)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from fleet.settings.base import Section
from probes.settings import ProbeSettings

_GPU_SELECTION = re.compile(r"^(all|\d+(,\d+)*)$")


def _gpu_selection(value: str) -> str:
    if not _GPU_SELECTION.match(value):
        raise ValueError("expected 'all' or GPU indices such as '0,3'")
    return value


def _python(value: str) -> str:
    if not value.strip() or any(c.isspace() for c in value):
        raise ValueError("expected one executable name or path, without spaces or arguments")
    return value


Python = Annotated[str, AfterValidator(_python)]


class ProbesSection(Section):
    """[probes] node probes (docs/probes.md)."""

    probe_python: Python = "python3"
    """Python on the nodes that runs the probes; it needs torch (a CUDA build). One
    executable name or path; a leading "~/" means the login's home directory."""
    python_overrides: dict[str, Python] = Field(default_factory=dict)
    """probe_python for some nodes only, keyed by node name, e.g.
    {"gpu-007" = "/opt/conda/bin/python"}."""
    suite: Literal["quick", "full"] = "quick"
    """Suite run by default: quick (gemm, hbm, sdc) or full (adds pcie and nccl)."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 120.0
    """Seconds a suite may run on a node; the probe stops itself at this limit."""
    startup_grace_s: Annotated[float, Field(ge=0, le=600)] = 60.0
    """Extra seconds the controller waits for the node's Python and torch to start
    before it stops a probe that did not stop itself."""
    gpus: Annotated[str, AfterValidator(_gpu_selection)] = "all"
    """GPUs to probe: "all" or indices such as "0,3"."""
    slow_fraction: Annotated[float, Field(gt=0, le=1)] = 0.8
    """A GPU is slow below this fraction of the figure expected for its model
    (the achievable figures in docs/probes.md)."""
    straggler_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.10
    """A GPU is a straggler this far below the fleet median of the same model and probe."""
    straggler_repeats: Annotated[int, Field(ge=0, le=10)] = 2
    """How many times a GPU found an unsure straggler (near the bar, one run) is measured
    again before its verdict is shown; 0 shows the first verdict as it is."""

    def settings(self) -> ProbeSettings:
        """The runner's settings from this table."""
        return ProbeSettings(
            python=self.probe_python,
            python_by_node=dict(self.python_overrides),
            timeout_s=self.timeout_s,
            startup_grace_s=self.startup_grace_s,
            gpus=self.gpus,
            slow_fraction=self.slow_fraction,
            straggler_fraction=self.straggler_fraction,
            straggler_repeats=self.straggler_repeats,
        )
