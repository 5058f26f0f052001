"""The simulated NVML node: a fake ``libnvidia-ml`` under the real ``pynvml``, a fake
sysfs tree for InfiniBand ports, seeded workloads and timed faults from a scenario.

Standard library and ``pynvml`` only: this package is bundled into the agent zipapp
for simulated nodes.

Typical use::

    from collectors import sim
    node = sim.install("node-003", sim.load_scenario(sim.default_scenario_path()), seed=7)
    import pynvml
    pynvml.nvmlInit()  # talks to the simulated node
"""

from collectors.sim.clock import ManualClock, epoch_clock
from collectors.sim.node import SimNode, install
from collectors.sim.probe_env import PROBE_ENV_VAR, probe_fault_env, probe_fault_env_json
from collectors.sim.scenario import (
    KINDS,
    Fault,
    Scenario,
    ScenarioError,
    default_scenario,
    default_scenario_path,
    load_scenario,
    parse_scenario,
)

__all__ = [
    "KINDS",
    "PROBE_ENV_VAR",
    "Fault",
    "ManualClock",
    "Scenario",
    "ScenarioError",
    "SimNode",
    "default_scenario",
    "default_scenario_path",
    "epoch_clock",
    "install",
    "load_scenario",
    "parse_scenario",
    "probe_fault_env",
    "probe_fault_env_json",
]
