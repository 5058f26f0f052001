"""The tests' loopback fleet: the demo's simulated nodes, canned or misbehaving on request."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path

import asyncssh

from collectors.demo.execs import ExecHandler
from collectors.demo.fleet import SimulatedFleet, node_names, server_options
from collectors.demo.node import SimulatedNode
from collectors.demo.server import NodeServer
from testkit.loopback.behaviour import NORMAL, NodeBehaviour
from testkit.loopback.execs import CannedExecHandler, NodeMode
from testkit.loopback.node import LoopbackNode

__all__ = ["LoopbackFleet", "node_names"]


class LoopbackFleet(SimulatedFleet):
    """N simulated nodes on loopback ports, each behaving as ``behaviours`` says.

    ``mode="agent"`` runs the real agent with the simulator behind it, as the demo
    does; ``mode="canned"`` streams made-up lines from this process (cheap, for
    1,000-node benchmarks and transport tests). ``impostor_host_key`` is what a
    ``wrong-host-key`` node presents instead of ``host_key``.

    Use as ``async with LoopbackFleet(nodes=16) as lf: lf.targets()``.
    """

    def __init__(
        self,
        nodes: int | Sequence[str] = 16,
        gpus: int = 8,
        *,
        mode: NodeMode = "agent",
        scenario: Path | None = None,
        seed: int = 0,
        behaviours: Mapping[str, NodeBehaviour] | None = None,
        client_key: asyncssh.SSHKey | None = None,
    ) -> None:
        self._behaviours = dict(behaviours or {})
        self.mode = mode
        super().__init__(nodes, gpus, scenario=scenario, seed=seed, client_key=client_key)
        self.impostor_host_key = asyncssh.generate_private_key("ssh-ed25519")
        self._impostor_options: asyncssh.SSHServerConnectionOptions | None = None

    def _new_node(self, name: str, home: Path) -> SimulatedNode:
        return LoopbackNode(name, home, behaviour=self._behaviours.get(name, NORMAL))

    def _wants_simulation(self) -> bool:
        return self.mode == "agent" or self._scenario is not None

    def _exec_handler(self) -> ExecHandler:
        return CannedExecHandler(self.mode, self.gpus, self.simulation)

    async def _listen(
        self,
        node: SimulatedNode,
        options: asyncssh.SSHServerConnectionOptions | None = None,
        server: type[NodeServer] = NodeServer,
    ) -> None:
        assert isinstance(node, LoopbackNode)
        kind = node.behaviour.kind
        if kind == "hang":
            listener = await asyncio.start_server(
                functools.partial(_hang, node), "127.0.0.1", node.port, reuse_address=True
            )
            node.port = listener.sockets[0].getsockname()[1]
            node.listener = listener
            return
        if kind == "wrong-host-key":
            if self._impostor_options is None:
                self._impostor_options = server_options(self.impostor_host_key)
            options = self._impostor_options
        await super()._listen(node, options, RefusingServer if kind == "auth-fail" else server)


class RefusingServer(NodeServer):
    """An ``auth-fail`` node: refuses every client key."""

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        """No key is good enough."""
        return False


async def _hang(
    node: LoopbackNode, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    # Never answer: the client's connect timeout is what ends this.
    node.hung_sockets.add(writer)
    with contextlib.suppress(OSError):
        await reader.read()
    node.hung_sockets.discard(writer)
    writer.close()
