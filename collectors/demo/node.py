"""One simulated node on loopback: its port, home directory, connections and counters."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh


@dataclass(eq=False)
class SimulatedNode:
    """A node's server-side state. ``uploads`` and ``execs`` count what clients did."""

    name: str
    home: Path
    port: int = 0
    uploads: int = 0
    execs: int = 0
    listener: asyncssh.SSHAcceptor | asyncio.Server | None = None
    connections: set[asyncssh.SSHServerConnection] = field(default_factory=set)

    def drop_connections(self) -> None:
        """Cut every connection to this node at once, as a dead link would."""
        for conn in list(self.connections):
            conn.abort()
        self.connections.clear()
