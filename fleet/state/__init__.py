"""Fleet state: ingests node updates, publishes FleetSnapshots (docs/health.md)."""

from fleet.state.fleet import FleetState
from fleet.state.node import NodeSpec

__all__ = ["FleetState", "NodeSpec"]
