"""Simulated nodes behind real SSH servers on loopback: the demo, tests and benchmarks.

- :class:`LoopbackFleet`: N asyncssh servers on 127.0.0.1, one port per node, running
  the real agent on the simulator (``mode="agent"``) or streaming canned lines
  (``mode="canned"``), with per-node misbehaviour (:class:`NodeBehaviour`).
- :func:`start_demo_fleet`: what ``gpufleet demo`` connects to.
- :class:`LoopbackProcess`: the same fleet in a child process (benchmarks).
- :class:`OpenSshServer`: a real OpenSSH sshd on loopback.
- :class:`UpdateRecorder`, :func:`eventually`, :func:`streaming_fleet`,
  :func:`fast_options`: test harness for anything that consumes node updates.
"""

from collectors.loopback.behaviour import BehaviourKind, NodeBehaviour
from collectors.loopback.demo import DemoFleet, start_demo_fleet
from collectors.loopback.fleet import LoopbackFleet, node_names
from collectors.loopback.harness import FAST_INTERVAL, fast_options, streaming_fleet
from collectors.loopback.node import LoopbackNode
from collectors.loopback.openssh import OpenSshServer
from collectors.loopback.process import LoopbackProcess
from collectors.loopback.recorder import UpdateRecorder, eventually

__all__ = [
    "FAST_INTERVAL",
    "BehaviourKind",
    "DemoFleet",
    "LoopbackFleet",
    "LoopbackNode",
    "LoopbackProcess",
    "NodeBehaviour",
    "OpenSshServer",
    "UpdateRecorder",
    "eventually",
    "fast_options",
    "node_names",
    "start_demo_fleet",
    "streaming_fleet",
]
