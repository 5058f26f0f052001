"""The scenario as the loopback server applies it: agent flags, probe faults, outages."""

from __future__ import annotations

import importlib
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class Simulation:
    """Binds a scenario file and seed to the loopback fleet's clock.

    Args:
        scenario: the scenario TOML; ``None`` is the simulator's default scenario.
        seed: the workload seed handed to every agent.
        gpus: GPUs per simulated node.
        clock: seconds; ``elapsed`` counts from construction.
    """

    def __init__(
        self,
        scenario: Path | None,
        seed: int,
        gpus: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        sim = importlib.import_module("collectors.sim.scenario")
        self.path: Path = scenario if scenario is not None else sim.default_scenario_path()
        self.scenario: Any = sim.load_scenario(self.path)
        self.seed = seed
        self.gpus = gpus
        self._clock = clock
        self._started = clock()

    @property
    def elapsed(self) -> float:
        """Seconds since the fleet started."""
        return self._clock() - self._started

    def unreachable(self, node: str) -> bool:
        """Whether the scenario has ``node`` off the network right now."""
        return bool(self.scenario.unreachable(node, self.elapsed))

    def agent_args(self, node: str) -> list[str]:
        """Flags that turn the real agent into this simulated node."""
        return [
            "--sim",
            str(self.path),
            "--sim-node",
            node,
            "--sim-seed",
            str(self.seed),
            "--sim-gpus",
            str(self.gpus),
            "--host",
            node,
        ]

    def probe_env(self, node: str) -> dict[str, str]:
        """Environment for a probe run: the scenario's probe faults for ``node`` now."""
        try:
            module = importlib.import_module("collectors.sim")
            fault_env = module.probe_fault_env
        except (ImportError, AttributeError):
            log.warning("collectors.sim has no probe_fault_env: probes run without faults")
            return {}
        faults = fault_env(self.scenario, node, self.elapsed, self.gpus)
        return {"GPUFLEET_SIM_PROBE_FAULTS": json.dumps(faults)}
