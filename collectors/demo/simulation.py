"""The scenario as the loopback server applies it: agent flags, probe faults, outages."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from collectors.sim import (
    PROBE_ENV_VAR,
    Scenario,
    default_scenario_path,
    load_scenario,
    probe_fault_env_json,
)


class Simulation:
    """Binds a scenario file and seed to the loopback fleet's clock.

    Args:
        scenario: the scenario TOML; ``None`` is the simulator's default scenario.
        seed: the workload seed handed to every agent.
        gpus: GPUs per simulated node.
        clock: Unix time; ``elapsed`` counts from construction (the fleet's epoch).
    """

    def __init__(
        self,
        scenario: Path | None,
        seed: int,
        gpus: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path: Path = scenario if scenario is not None else default_scenario_path()
        self.scenario: Scenario = load_scenario(self.path)
        self.seed = seed
        self.gpus = gpus
        self._clock = clock
        self.epoch = clock()

    @property
    def elapsed(self) -> float:
        """Seconds since the fleet started."""
        return self._clock() - self.epoch

    def unreachable(self, node: str) -> bool:
        """Whether the scenario has ``node`` off the network right now."""
        return self.scenario.unreachable(node, self.elapsed)

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
            # Scenario time is the fleet's, not each agent's: a restarted agent (or one
            # started late) sees the faults that hold now, as the outages do.
            "--sim-epoch",
            repr(self.epoch),
        ]

    def probe_env(self, node: str) -> dict[str, str]:
        """Environment for a probe run: the scenario's probe faults for ``node`` now."""
        faults = probe_fault_env_json(self.scenario, node, self.elapsed, self.gpus)
        return {PROBE_ENV_VAR: faults}
