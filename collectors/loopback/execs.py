"""What a loopback node does with an exec request: canned lines or a local process."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import posixpath
import shlex
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import asyncssh

from collectors.loopback.canned import SampleMaker, hello_line
from collectors.loopback.node import LoopbackNode
from collectors.loopback.simulation import Simulation
from collectors.protocol import MAX_LINE_BYTES

NodeMode = Literal["agent", "canned"]
# Canned nodes answer this command with one sample and exit: the per-poll baseline
# (one exec per sample, as gpustat-web does) of bench/bench_ssh.py.
SAMPLE_ONCE = "gpufleet-sample-once"
_TERMINATE_GRACE = 3.0


def agent_script_index(argv: list[str]) -> int | None:
    """Where the agent zipapp's path is in ``argv``, or None when it does not run the agent.

    Either ``<python> .../agent-<sha>.pyz ...`` or the controller's hash-checking
    bootstrap, ``<python> -c <code> .../agent-<sha>.pyz <sha256> ...``.
    """
    for index in (1, 3):
        if (
            len(argv) > index
            and fnmatch.fnmatch(posixpath.basename(argv[index]), "agent-*.pyz")
            and (index == 1 or argv[1] == "-c")
        ):
            return index
    return None


def is_agent_command(argv: list[str]) -> bool:
    """Whether the command runs the agent zipapp (directly or through the bootstrap)."""
    return agent_script_index(argv) is not None


def _option(argv: list[str], name: str, default: float) -> float:
    try:
        return float(argv[argv.index(name) + 1])
    except (ValueError, IndexError):
        return default


class ExecHandler:
    """Answers exec requests for every node of a loopback fleet.

    In ``canned`` mode the agent is not started: lines are made in this process at
    the requested interval (cheap enough for 1,000 nodes). In ``agent`` mode the
    command runs as a local process in the node's home directory, the agent with the
    simulator flags appended and any other command (a probe) with the scenario's
    probe faults in its environment.
    """

    def __init__(self, mode: NodeMode, gpus: int, simulation: Simulation | None) -> None:
        self._mode = mode
        self._gpus = gpus
        self._simulation = simulation
        self._running: set[asyncio.Task[Any]] = set()
        self._cleanups: set[asyncio.Future[None]] = set()

    async def close(self) -> None:
        """Cancel every answer still running and wait until their processes are gone."""
        tasks, self._running = self._running, set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*self._cleanups, return_exceptions=True)

    def factory(
        self, node: LoopbackNode
    ) -> Callable[[asyncssh.SSHServerProcess[bytes]], Awaitable[None]]:
        """The ``process_factory`` of ``node``'s listener."""

        async def handle(process: asyncssh.SSHServerProcess[bytes]) -> None:
            node.execs += 1
            task = asyncio.current_task()
            assert task is not None
            self._running.add(task)
            try:
                # The client may go away mid-answer: there is nobody left to tell.
                with contextlib.suppress(asyncssh.Error, OSError):
                    await self._handle(node, process)
            finally:
                self._running.discard(task)

        return handle

    async def _handle(self, node: LoopbackNode, process: asyncssh.SSHServerProcess[bytes]) -> None:
        argv = shlex.split(process.command or "")
        if not argv:
            process.stderr.write(b"loopback nodes have no interactive shell\n")
            process.exit(1)
        elif argv[0] == SAMPLE_ONCE and self._mode == "canned":
            process.stdout.write(SampleMaker(self._gpus).line(time.time()))
            process.exit(0)
        elif is_agent_command(argv) and self._mode == "canned":
            script = self._localise(node, argv)[agent_script_index(argv) or 1]
            if (node.home / script).is_file():
                await CannedAgent(node, process, self._gpus, argv).run()
            else:  # what Python says, so the client's upload-when-missing path is exercised
                message = f"{argv[0]}: can't open file {script!r}: [Errno 2] No such file"
                process.stderr.write(message.encode() + b"\n")
                process.exit(2)
        elif is_agent_command(argv):
            argv = self._localise(node, argv)
            extra = self._simulation.agent_args(node.name) if self._simulation else []
            await run_local(node, process, [*argv, *extra], {}, self._cleanups)
        elif self._mode == "agent":
            env = self._simulation.probe_env(node.name) if self._simulation else {}
            await run_local(node, process, argv, env, self._cleanups)
        else:
            process.stderr.write(b"canned loopback nodes run only the agent\n")
            process.exit(127)

    @staticmethod
    def _localise(node: LoopbackNode, argv: list[str]) -> list[str]:
        # SFTP is jailed in the node's home: an absolute remote path lives under it.
        index = agent_script_index(argv) or 1
        script = argv[index]
        if script.startswith("/"):
            script = str(node.home / script.lstrip("/"))
        return [*argv[:index], script, *argv[index + 1 :]]


async def run_local(
    node: LoopbackNode,
    process: asyncssh.SSHServerProcess[bytes],
    argv: list[str],
    env: dict[str, str],
    cleanups: set[asyncio.Future[None]],
) -> None:
    """Run ``argv`` in the node's home, piping its output to the channel.

    The process gets SIGTERM (then SIGKILL) when the channel closes first; the task
    that makes sure of that is kept in ``cleanups`` until it is done.
    """
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=node.home,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "HOME": str(node.home), **env},
        )
    except OSError as exc:
        process.stderr.write(f"{argv[0]}: {exc.strerror}\n".encode())
        process.exit(127)
        return
    assert proc.stdout is not None and proc.stderr is not None
    pumps: asyncio.Future[object] = asyncio.ensure_future(
        _pump_all(proc.stdout, proc.stderr, process)
    )
    closed: asyncio.Future[object] = asyncio.ensure_future(process.wait_closed())
    try:
        done, _ = await asyncio.wait({pumps, closed}, return_when=asyncio.FIRST_COMPLETED)
        if pumps in done:
            process.exit(await proc.wait())
    finally:
        closed.cancel()
        # asyncssh cancels a closing connection's tasks, possibly twice: the cleanup runs
        # in its own task so a second cancel cannot leave the process or its pipes behind.
        cleanup = asyncio.ensure_future(_end_process(proc, pumps))
        cleanups.add(cleanup)
        cleanup.add_done_callback(cleanups.discard)
        await asyncio.shield(cleanup)


async def _end_process(proc: asyncio.subprocess.Process, pumps: asyncio.Future[object]) -> None:
    await _terminate(proc)
    # Once the process is gone its pipes reach end of file and the pumps finish;
    # cancelling them instead would leave the pipe transports open.
    with contextlib.suppress(TimeoutError, OSError, asyncssh.Error):
        await asyncio.wait_for(pumps, _TERMINATE_GRACE)


async def _pump_all(
    stdout: asyncio.StreamReader,
    stderr: asyncio.StreamReader,
    process: asyncssh.SSHServerProcess[bytes],
) -> None:
    await asyncio.gather(_pump(stdout, process.stdout), _pump(stderr, process.stderr))


async def _pump(reader: asyncio.StreamReader, writer: asyncssh.SSHWriter[bytes]) -> None:
    while chunk := await reader.read(65536):
        # A closed channel refuses writes; keep draining the pipe to its end regardless.
        with contextlib.suppress(OSError, asyncssh.Error):
            writer.write(chunk)


async def _terminate(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), _TERMINATE_GRACE)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


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
