"""Faults that only probes can see, handed to probe processes in an environment variable."""

from __future__ import annotations

import json
from typing import Any

from collectors.sim.scenario import Fault, Scenario, fault_end

PROBE_ENV_VAR = "GPUFLEET_SIM_PROBE_FAULTS"


def probe_fault_env(
    scenario: Scenario | None, node: str, elapsed: float, gpus: int = 8
) -> dict[str, Any]:
    """The probe-visible faults of ``node`` at ``elapsed`` seconds, JSON-able.

    The loopback SSH server exports ``json.dumps`` of this as
    ``GPUFLEET_SIM_PROBE_FAULTS`` to probe processes, e.g.
    ``{"gpus": 8, "slow": {"3": 3.0}, "sdc": [5]}``: GPU index (as a string key) to
    slowdown factor, and the GPUs whose GEMM results are wrong. Fabric faults add
    ``"fabric_slow": factor`` (this node's inter-node all-reduce is that many times
    slower) and ``"fabric_hang": true`` (it never completes); the keys are absent on a
    healthy node. A ``gpu_missing`` GPU is not counted in ``gpus``: torch cannot see a
    GPU that fell off the bus either.
    """
    slow: dict[str, float] = {}
    sdc: set[int] = set()
    missing: set[int] = set()
    fabric: dict[str, Any] = {}
    scenario = scenario or Scenario()
    for fault in scenario.faults_for(node):
        if not fault.at <= elapsed < fault_end(scenario, fault):
            continue
        _fabric_effect(fault, fabric)
        targets = range(gpus) if fault.gpu is None else (fault.gpu,)
        for gpu in targets:
            if fault.kind == "slow_gpu":
                slow[str(gpu)] = max(slow.get(str(gpu), 1.0), float(fault.params["factor"]))
            elif fault.kind == "sdc":
                sdc.add(gpu)
            elif fault.kind == "gpu_missing":
                missing.add(gpu)
    visible = max(0, gpus - len(missing))
    env = {"gpus": visible, "slow": dict(sorted(slow.items())), "sdc": sorted(sdc)}
    return {**env, **fabric}


def _fabric_effect(fault: Fault, fabric: dict[str, Any]) -> None:
    if fault.kind == "slow_fabric":
        factor = float(fault.params["factor"])
        fabric["fabric_slow"] = max(float(fabric.get("fabric_slow", 1.0)), factor)
    elif fault.kind == "fabric_hang":
        fabric["fabric_hang"] = True


def probe_fault_env_json(
    scenario: Scenario | None, node: str, elapsed: float, gpus: int = 8
) -> str:
    """:func:`probe_fault_env` serialised for the environment variable."""
    return json.dumps(probe_fault_env(scenario, node, elapsed, gpus), separators=(",", ":"))
