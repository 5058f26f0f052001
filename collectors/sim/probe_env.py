"""Faults that only probes can see, handed to probe processes in an environment variable."""

from __future__ import annotations

import json
from typing import Any

from collectors.sim.scenario import Scenario, fault_end

PROBE_ENV_VAR = "GPUFLEET_SIM_PROBE_FAULTS"


def probe_fault_env(
    scenario: Scenario | None, node: str, elapsed: float, gpus: int = 8
) -> dict[str, Any]:
    """The probe-visible faults of ``node`` at ``elapsed`` seconds, JSON-able.

    The loopback SSH server exports ``json.dumps`` of this as
    ``GPUFLEET_SIM_PROBE_FAULTS`` to probe processes, e.g.
    ``{"gpus": 8, "slow": {"3": 3.0}, "sdc": [5]}``: GPU index (as a string key) to
    slowdown factor, and the GPUs whose GEMM results are wrong.
    """
    slow: dict[str, float] = {}
    sdc: set[int] = set()
    scenario = scenario or Scenario()
    for fault in scenario.faults_for(node):
        if not fault.at <= elapsed < fault_end(scenario, fault):
            continue
        targets = range(gpus) if fault.gpu is None else (fault.gpu,)
        for gpu in targets:
            if fault.kind == "slow_gpu":
                slow[str(gpu)] = max(slow.get(str(gpu), 1.0), float(fault.params["factor"]))
            elif fault.kind == "sdc":
                sdc.add(gpu)
    return {"gpus": gpus, "slow": dict(sorted(slow.items())), "sdc": sorted(sdc)}


def probe_fault_env_json(
    scenario: Scenario | None, node: str, elapsed: float, gpus: int = 8
) -> str:
    """:func:`probe_fault_env` serialised for the environment variable."""
    return json.dumps(probe_fault_env(scenario, node, elapsed, gpus), separators=(",", ":"))
