"""Simulated nodes behind real SSH servers on loopback: the demo, tests and benchmarks."""

from collectors.loopback.behaviour import BehaviourKind, NodeBehaviour
from collectors.loopback.fleet import LoopbackFleet, node_names
from collectors.loopback.node import LoopbackNode

__all__ = ["BehaviourKind", "LoopbackFleet", "LoopbackNode", "NodeBehaviour", "node_names"]
