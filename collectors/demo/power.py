"""Power cycles of simulated nodes: what a reboot, a GPU swap or a node replacement does
to the node's SSH side.

In life a GPU or node swap comes with the node powered off: every session ends, and the
agent started afterwards says hello with the hardware it finds. The simulator's scenario
names the moments (``reboot``, ``node_replaced``, ``recover`` with ``new_uuid``); the
loopback fleet cuts the node's connections at each, so the controller reconnects and
restarts the agent, whose hello carries the new UUIDs and serials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from collectors.sim import Scenario

CycleKind = Literal["reboot", "gpu_swap", "node_replaced"]


@dataclass(frozen=True, slots=True)
class PowerCycle:
    """One moment a node goes down and comes back, seconds after the fleet's start."""

    node: str
    at: float
    kind: CycleKind


def power_cycles(scenario: Scenario) -> tuple[PowerCycle, ...]:
    """Every power cycle the scenario implies, in time order."""
    cycles = []
    for fault in scenario.faults:
        if fault.kind == "reboot":
            cycles.append(PowerCycle(fault.node, fault.at, "reboot"))
        elif fault.kind == "node_replaced":
            cycles.append(PowerCycle(fault.node, fault.at, "node_replaced"))
        elif fault.kind == "recover" and fault.params.get("new_uuid"):
            cycles.append(PowerCycle(fault.node, fault.at, "gpu_swap"))
    return tuple(sorted(cycles, key=lambda c: (c.at, c.node)))


class PowerSchedule:
    """Hands out each power cycle once, when its time has come."""

    def __init__(self, cycles: tuple[PowerCycle, ...]) -> None:
        self._pending = list(cycles)

    def due(self, elapsed: float) -> list[PowerCycle]:
        """The cycles whose time is at or before ``elapsed`` and not yet handed out."""
        now = [c for c in self._pending if c.at <= elapsed]
        self._pending = [c for c in self._pending if c.at > elapsed]
        return now

    def __bool__(self) -> bool:
        return bool(self._pending)
