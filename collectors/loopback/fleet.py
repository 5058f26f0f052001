"""Simulated nodes behind real asyncssh servers on 127.0.0.1, one port per node."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import getpass
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import asyncssh

from collectors.loopback.behaviour import NORMAL, NodeBehaviour
from collectors.loopback.execs import ExecHandler, NodeMode
from collectors.loopback.node import LoopbackNode
from collectors.loopback.server import NodeServer, NodeSftp
from collectors.loopback.simulation import Simulation
from collectors.ssh.target import NodeTarget

_OUTAGE_CHECK = 0.25  # seconds between checks of the scenario's node_unreachable faults


def node_names(count: int) -> list[str]:
    """``node-001`` ... : the names the simulator's scenarios use."""
    return [f"node-{i:03d}" for i in range(1, count + 1)]


class LoopbackFleet:
    """N simulated nodes, each an SSH server on its own loopback port.

    The servers use a host key generated here (``known_hosts`` lists it per node)
    and accept only ``client_key``. ``mode="agent"`` runs the real agent with the
    simulator behind it; ``mode="canned"`` streams made-up lines from this process
    (cheap, for 1,000-node benchmarks and transport tests).

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
        names = node_names(nodes) if isinstance(nodes, int) else list(nodes)
        self._workdir = Path(tempfile.mkdtemp(prefix="gpufleet-loopback-"))
        behaviours = behaviours or {}
        self.nodes: dict[str, LoopbackNode] = {
            name: LoopbackNode(name, self._workdir / name, behaviours.get(name, NORMAL))
            for name in names
        }
        self.gpus = gpus
        self.mode = mode
        self._scenario = scenario
        self._seed = seed
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.impostor_host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = client_key or asyncssh.generate_private_key("ssh-ed25519")
        self.client_key_path = str(self._workdir / "client_key")
        self.known_hosts = str(self._workdir / "known_hosts")
        self.simulation: Simulation | None = None
        self._execs: ExecHandler | None = None
        self._server_options: dict[bool, asyncssh.SSHServerConnectionOptions] = {}
        self._watch: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopbackFleet:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Write keys and known_hosts, and start every node's listener."""
        self._write_client_key()
        if self.mode == "agent" or self._scenario is not None:
            self.simulation = Simulation(self._scenario, self._seed, self.gpus)
        self._execs = ExecHandler(self.mode, self.gpus, self.simulation)
        for impostor in (False, True):
            key = self.impostor_host_key if impostor else self.host_key
            # Built once: per-node listeners share them (1,000 nodes stay cheap).
            self._server_options[impostor] = asyncssh.SSHServerConnectionOptions(
                server_host_keys=[key], encoding=None, keepalive_interval=30
            )
        for node in self.nodes.values():
            node.home.mkdir(parents=True, exist_ok=True)
            await self.start_node(node.name)
        self._write_known_hosts()
        if self.simulation is not None and self.simulation.scenario.faults:
            self._watch = asyncio.create_task(self._apply_outages(), name="loopback-outages")

    async def stop(self) -> None:
        """Close every listener and connection, end every node process, remove files."""
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        for node in self.nodes.values():
            await self.stop_node(node.name)
        if self._execs is not None:
            await self._execs.close()
        shutil.rmtree(self._workdir, ignore_errors=True)

    async def start_node(self, name: str) -> None:
        """(Re)start ``name``'s listener, on its old port when it had one."""
        node = self.nodes[name]
        if node.listener is not None:
            return
        if node.behaviour.kind == "hang":
            server = await asyncio.start_server(
                functools.partial(_hang, node), "127.0.0.1", node.port, reuse_address=True
            )
            node.port = server.sockets[0].getsockname()[1]
            node.listener = server
            return
        assert self._execs is not None
        acceptor = await asyncssh.listen(
            "127.0.0.1",
            node.port,
            reuse_address=True,
            options=self._server_options[node.behaviour.kind == "wrong-host-key"],
            server_factory=functools.partial(NodeServer, node, self.client_key, self._reachable),
            process_factory=self._execs.factory(node),
            sftp_factory=functools.partial(NodeSftp, node=node),
        )
        node.port = acceptor.get_port()
        node.listener = acceptor

    async def stop_node(self, name: str) -> None:
        """Stop ``name``'s listener and cut its connections (a crashed sshd or host)."""
        node = self.nodes[name]
        listener, node.listener = node.listener, None
        if listener is not None:
            listener.close()
        node.drop_connections()
        if listener is not None:
            await listener.wait_closed()

    def targets(self, client_key_path: str | None = None, **overrides: Any) -> list[NodeTarget]:
        """One target per node, trusting this fleet's host key through ``known_hosts``.

        Args:
            client_key_path: identity file to log in with (default: this fleet's key).
            **overrides: any other :class:`NodeTarget` field, for every node.
        """
        base = NodeTarget(
            name="",
            host="127.0.0.1",
            user=getpass.getuser(),
            identity_files=(client_key_path or self.client_key_path,),
            python=sys.executable,
            expected_gpus=self.gpus,
            known_hosts=self.known_hosts,
        )
        base = replace(base, **overrides)
        return [replace(base, name=n.name, port=n.port) for n in self.nodes.values()]

    def _write_client_key(self) -> None:
        self.client_key.write_private_key(self.client_key_path)
        Path(self.client_key_path).chmod(0o600)

    def _write_known_hosts(self) -> None:
        public = self.host_key.export_public_key("openssh").decode().split()
        lines = [f"[127.0.0.1]:{n.port} {public[0]} {public[1]}\n" for n in self.nodes.values()]
        Path(self.known_hosts).write_text("".join(lines), encoding="ascii")

    def _reachable(self, node: LoopbackNode) -> bool:
        return self.simulation is None or not self.simulation.unreachable(node.name)

    async def _apply_outages(self) -> None:
        while True:
            await asyncio.sleep(_OUTAGE_CHECK)
            for node in self.nodes.values():
                if node.connections and not self._reachable(node):
                    node.drop_connections()


async def _hang(
    node: LoopbackNode, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    # Never answer: the client's connect timeout is what ends this.
    node.hung_sockets.add(writer)
    with contextlib.suppress(OSError):
        await reader.read()
    node.hung_sockets.discard(writer)
    writer.close()
