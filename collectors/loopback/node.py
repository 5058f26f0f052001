"""One simulated node on loopback: its port, home directory, behaviour and counters."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from collectors.loopback.behaviour import NORMAL, NodeBehaviour


@dataclass(eq=False)
class LoopbackNode:
    """A node's server-side state. ``uploads`` and ``execs`` let tests see what happened."""

    name: str
    home: Path
    behaviour: NodeBehaviour = NORMAL
    port: int = 0
    uploads: int = 0
    execs: int = 0
    listener: asyncssh.SSHAcceptor | asyncio.Server | None = None
    connections: set[asyncssh.SSHServerConnection] = field(default_factory=set)
    hung_sockets: set[asyncio.StreamWriter] = field(default_factory=set)

    def drop_connections(self) -> None:
        """Cut every connection to this node at once, as a dead link would."""
        for conn in list(self.connections):
            conn.abort()
        for writer in list(self.hung_sockets):
            writer.transport.abort()
        self.connections.clear()
        self.hung_sockets.clear()
