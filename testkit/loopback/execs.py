"""Exec requests on the tests' loopback nodes: canned lines made in this process.

In ``canned`` mode the agent is not started: lines are made in this process at the
requested interval (cheap enough for 1,000 nodes), misbehaving as each node is told.
In ``agent`` mode the demo's handler runs the real agent on the simulator.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from typing import Literal

import asyncssh

from collectors.demo.execs import ExecHandler, agent_script_index, is_agent_command, localise
from collectors.demo.node import SimulatedNode
from collectors.demo.simulation import Simulation
from collectors.protocol import MAX_LINE_BYTES
from testkit.loopback.canned import SampleMaker, hello_line
from testkit.loopback.node import LoopbackNode

NodeMode = Literal["agent", "canned"]
# Canned nodes answer this command with one sample and exit: the per-poll baseline
# (one exec per sample, as gpustat-web does) of bench/bench_ssh.py.
SAMPLE_ONCE = "gpufleet-sample-once"


def _option(argv: list[str], name: str, default: float) -> float:
    try:
        return float(argv[argv.index(name) + 1])
    except (ValueError, IndexError):
        return default


class CannedExecHandler(ExecHandler):
    """The demo's handler, or in ``canned`` mode a stand-in agent per exec."""

    def __init__(self, mode: NodeMode, gpus: int, simulation: Simulation | None) -> None:
        super().__init__(gpus, simulation)
        self._mode = mode

    async def _handle(self, node: SimulatedNode, process: asyncssh.SSHServerProcess[bytes]) -> None:
        argv = shlex.split(process.command or "")
        if self._mode == "agent" or not argv:
            await super()._handle(node, process)
            return
        assert isinstance(node, LoopbackNode)
        if argv[0] == SAMPLE_ONCE:
            process.stdout.write(SampleMaker(self._gpus).line(time.time()))
            process.exit(0)
        elif is_agent_command(argv):
            script = localise(node, argv)[agent_script_index(argv) or 1]
            if (node.home / script).is_file():
                await CannedAgent(node, process, self._gpus, argv).run()
            else:  # what Python says, so the client's upload-when-missing path is exercised
                message = f"{argv[0]}: can't open file {script!r}: [Errno 2] No such file"
                process.stderr.write(message.encode() + b"\n")
                process.exit(2)
        else:
            process.stderr.write(b"canned loopback nodes run only the agent\n")
            process.exit(127)


class CannedAgent:
    """A stand-in agent that writes made-up lines, misbehaving as the node is told to."""

    def __init__(
        self,
        node: LoopbackNode,
        process: asyncssh.SSHServerProcess[bytes],
        gpus: int,
        argv: list[str],
    ) -> None:
        self._node = node
        self._process = process
        self._gpus = gpus
        self._interval = _option(argv, "--interval", 1.0)

    async def run(self) -> None:
        """Write hello and samples until the channel closes or the behaviour ends it."""
        behaviour = self._node.behaviour
        out = self._process.stdout
        if behaviour.kind == "slow":
            await asyncio.sleep(behaviour.delay)
        if behaviour.kind == "silent":
            await self._process.wait_closed()
            return
        out.write(hello_line(self._node.name, self._gpus, time.time(), self._interval))
        maker = SampleMaker(self._gpus)
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while True:
            if maker.seq >= behaviour.after_lines and self._misbehave():
                return
            if self._process.is_closing():
                return
            out.write(maker.line(time.time()))
            next_at += self._interval
            await asyncio.sleep(max(0.0, next_at - loop.time()))

    def _misbehave(self) -> bool:
        kind = self._node.behaviour.kind
        if kind == "drop":
            self._node.drop_connections()
        elif kind == "garbage":
            self._process.stdout.write(b"Traceback (most recent call last): not protocol\n")
        elif kind == "long-line":
            self._process.stdout.write(b"x" * (MAX_LINE_BYTES + 1024))
        elif kind == "exit":
            self._process.stderr.write(b"simulated agent crash\n")
            self._process.exit(3)
        else:
            return False
        return kind != "garbage" and kind != "long-line"
