"""Loopback SSH nodes for tests and benchmarks, built on the demo's simulated fleet.

- :class:`LoopbackFleet`: :class:`collectors.demo.SimulatedFleet` with canned lines
  (``mode="canned"``) and per-node misbehaviour (:class:`NodeBehaviour`).
- :class:`LoopbackProcess`: the same fleet in a child process (benchmarks).
- :class:`OpenSshServer`: a real OpenSSH sshd on loopback.
- :class:`UpdateRecorder`, :func:`eventually`, :func:`streaming_fleet`,
  :func:`fast_options`: test harness for anything that consumes node updates.
"""

from testkit.loopback.behaviour import BehaviourKind, NodeBehaviour
from testkit.loopback.fleet import LoopbackFleet, node_names
from testkit.loopback.harness import FAST_INTERVAL, fast_options, streaming_fleet
from testkit.loopback.node import LoopbackNode
from testkit.loopback.openssh import OpenSshServer
from testkit.loopback.process import LoopbackProcess
from testkit.loopback.recorder import UpdateRecorder, eventually

__all__ = [
    "FAST_INTERVAL",
    "BehaviourKind",
    "LoopbackFleet",
    "LoopbackNode",
    "LoopbackProcess",
    "NodeBehaviour",
    "OpenSshServer",
    "UpdateRecorder",
    "eventually",
    "fast_options",
    "node_names",
    "streaming_fleet",
]
