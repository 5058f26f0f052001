"""A loopback node of the tests: a simulated node that may misbehave as it is told."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from collectors.demo.node import SimulatedNode
from testkit.loopback.behaviour import NORMAL, NodeBehaviour


@dataclass(eq=False)
class LoopbackNode(SimulatedNode):
    """A simulated node with a behaviour, and the raw sockets a ``hang`` node holds."""

    behaviour: NodeBehaviour = NORMAL
    hung_sockets: set[asyncio.StreamWriter] = field(default_factory=set)

    def drop_connections(self) -> None:
        """Cut every connection to this node at once, SSH or not, as a dead link would."""
        super().drop_connections()
        for writer in list(self.hung_sockets):
            writer.transport.abort()
        self.hung_sockets.clear()
