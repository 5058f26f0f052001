"""Simulated nodes behind real asyncssh servers on 127.0.0.1, one port per node."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import getpass
import logging
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

import asyncssh

from collectors.demo.execs import ExecHandler
from collectors.demo.node import SimulatedNode
from collectors.demo.power import PowerCycle, PowerSchedule, power_cycles
from collectors.demo.server import NodeServer, NodeSftp
from collectors.demo.simulation import Simulation
from collectors.ssh.target import NodeTarget

log = logging.getLogger(__name__)

_OUTAGE_CHECK = 0.25  # seconds between checks of the scenario's node_unreachable faults
LISTENER_CLOSE_S = 5.0  # seconds a stopped listener may wait for its connections


def node_names(count: int) -> list[str]:
    """``node-001`` ... : the names the simulator's scenarios use."""
    return [f"node-{i:03d}" for i in range(1, count + 1)]


class SimulatedFleet:
    """N simulated nodes, each an SSH server on its own loopback port.

    The servers use a host key generated here (``known_hosts`` lists it per node)
    and accept only ``client_key``. Each node runs the real agent with the simulator
    behind it. Test support subclasses this for misbehaving nodes; the ``_new_node``,
    ``_wants_simulation``, ``_exec_handler`` and ``_listen`` methods are its hooks.

    Use as ``async with SimulatedFleet(nodes=16) as sf: sf.targets()``.
    """

    def __init__(
        self,
        nodes: int | Sequence[str] = 16,
        gpus: int = 8,
        *,
        scenario: Path | None = None,
        seed: int = 0,
        client_key: asyncssh.SSHKey | None = None,
    ) -> None:
        names = node_names(nodes) if isinstance(nodes, int) else list(nodes)
        self._workdir = Path(tempfile.mkdtemp(prefix="gpufleet-loopback-"))
        self.nodes: dict[str, SimulatedNode] = {
            name: self._new_node(name, self._workdir / name) for name in names
        }
        self.gpus = gpus
        self._scenario = scenario
        self._seed = seed
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.client_key = client_key or asyncssh.generate_private_key("ssh-ed25519")
        self.client_key_path = str(self._workdir / "client_key")
        self.known_hosts = str(self._workdir / "known_hosts")
        self.simulation: Simulation | None = None
        self._execs: ExecHandler | None = None
        self._server_options: asyncssh.SSHServerConnectionOptions | None = None
        self._watch: asyncio.Task[None] | None = None
        self._power = PowerSchedule(())
        # A replaced node's own host key. The demo writes it into its known_hosts itself,
        # in the open: a changed key is accepted nowhere else (the SSH client refuses it).
        self.replaced_keys: dict[str, asyncssh.SSHKey] = {}

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Write keys and known_hosts, and start every node's listener."""
        self._write_client_key()
        if self._wants_simulation():
            self.simulation = Simulation(self._scenario, self._seed, self.gpus)
        self._execs = self._exec_handler()
        # Built once: per-node listeners share them (1,000 nodes stay cheap).
        self._server_options = server_options(self.host_key)
        for node in self.nodes.values():
            node.home.mkdir(parents=True, exist_ok=True)
            await self.start_node(node.name)
        self._write_known_hosts()
        if self.simulation is not None and self.simulation.scenario.faults:
            self._power = PowerSchedule(power_cycles(self.simulation.scenario))
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
        if node.listener is None:
            await self._listen(node)

    async def stop_node(self, name: str) -> None:
        """Stop ``name``'s listener and cut its connections (a crashed sshd or host)."""
        node = self.nodes[name]
        listener, node.listener = node.listener, None
        if listener is not None:
            listener.close()
        node.drop_connections()
        if listener is not None:
            # The listener waits for every connection to close, and a client cancelled in
            # the middle of its handshake (a node refusing its key is retried every few
            # tenths of a second) is one the node never tracked: bounded, or stop hangs.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listener.wait_closed(), LISTENER_CLOSE_S)

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

    def _new_node(self, name: str, home: Path) -> SimulatedNode:
        return SimulatedNode(name, home)

    def _wants_simulation(self) -> bool:
        return True

    def _exec_handler(self) -> ExecHandler:
        return ExecHandler(self.gpus, self.simulation)

    async def _listen(
        self,
        node: SimulatedNode,
        options: asyncssh.SSHServerConnectionOptions | None = None,
        server: type[NodeServer] = NodeServer,
    ) -> None:
        """Start ``node``'s SSH listener (its old port when it had one)."""
        assert self._execs is not None
        replaced = self.replaced_keys.get(node.name)
        if options is None and replaced is not None:
            options = server_options(replaced)
        acceptor = await asyncssh.listen(
            "127.0.0.1",
            node.port,
            reuse_address=True,
            options=options or self._server_options,
            server_factory=functools.partial(server, node, self.client_key, self._reachable),
            process_factory=self._execs.factory(node),
            sftp_factory=functools.partial(NodeSftp, node=node),
        )
        node.port = acceptor.get_port()
        node.listener = acceptor

    def _write_client_key(self) -> None:
        self.client_key.write_private_key(self.client_key_path)
        Path(self.client_key_path).chmod(0o600)

    def _write_known_hosts(self) -> None:
        lines = []
        for n in self.nodes.values():
            key = self.replaced_keys.get(n.name, self.host_key)
            kind, blob = key.export_public_key("openssh").decode().split()[:2]
            lines.append(f"[127.0.0.1]:{n.port} {kind} {blob}\n")
        Path(self.known_hosts).write_text("".join(lines), encoding="ascii")

    def _reachable(self, node: SimulatedNode) -> bool:
        return self.simulation is None or not self.simulation.unreachable(node.name)

    async def _apply_outages(self) -> None:
        while True:
            await asyncio.sleep(_OUTAGE_CHECK)
            if self._power and self.simulation is not None:
                for cycle in self._power.due(self.simulation.elapsed):
                    await self.power_cycle(cycle)
            for node in self.nodes.values():
                if node.connections and not self._reachable(node):
                    node.drop_connections()

    async def power_cycle(self, cycle: PowerCycle) -> None:
        """Power-cycle ``cycle.node``: its sessions end and its agent starts afresh.

        A replaced node comes back with a new host key, which the demo (and only the
        demo) writes into its own known_hosts, logging that it did.
        """
        node = self.nodes.get(cycle.node)
        if node is None:
            return
        if cycle.kind == "node_replaced":
            self.replaced_keys[node.name] = asyncssh.generate_private_key("ssh-ed25519")
            await self.stop_node(node.name)
            await self.start_node(node.name)
            self._write_known_hosts()
            log.info("demo: %s replaced; its new host key is in the demo's known_hosts", node.name)
        else:
            node.drop_connections()


def server_options(host_key: asyncssh.SSHKey) -> asyncssh.SSHServerConnectionOptions:
    """What every node's listener shares: the host key, bytes channels, keepalives."""
    return asyncssh.SSHServerConnectionOptions(
        server_host_keys=[host_key], encoding=None, keepalive_interval=30
    )
