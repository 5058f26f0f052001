"""The demo's fleet: simulated nodes behind real SSH servers on loopback.

- :class:`SimulatedFleet`: N asyncssh servers on 127.0.0.1, one port per node, each
  running the real agent on the simulator (:mod:`collectors.sim`) with the scenario's
  faults and outages.
- :func:`start_demo_fleet`: what ``gpufleet demo`` connects to.

Test doubles built on it (misbehaving nodes, canned lines, an OpenSSH launcher,
update recorders) live in the repository's ``testkit`` package, not in the product.
"""

from collectors.demo.fleet import SimulatedFleet, node_names
from collectors.demo.node import SimulatedNode
from collectors.demo.start import DemoFleet, start_demo_fleet

__all__ = ["DemoFleet", "SimulatedFleet", "SimulatedNode", "node_names", "start_demo_fleet"]
