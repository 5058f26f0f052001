"""What a simulated node does with an exec request: the agent or a probe, as a local process."""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import posixpath
import shlex
from collections.abc import Awaitable, Callable
from typing import Any

import asyncssh

from collectors.demo.node import SimulatedNode
from collectors.demo.simulation import Simulation

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


def localise(node: SimulatedNode, argv: list[str]) -> list[str]:
    """``argv`` with the agent's remote path turned into its place under the node's home."""
    # SFTP is jailed in the node's home: an absolute remote path lives under it.
    index = agent_script_index(argv) or 1
    script = argv[index]
    if script.startswith("/"):
        script = str(node.home / script.lstrip("/"))
    return [*argv[:index], script, *argv[index + 1 :]]


class ExecHandler:
    """Answers exec requests for every node of a simulated fleet.

    The command runs as a local process in the node's home directory: the agent with
    the simulator flags appended, any other command (a probe) with the scenario's
    probe faults in its environment.
    """

    def __init__(self, gpus: int, simulation: Simulation | None) -> None:
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
        self, node: SimulatedNode
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

    async def _handle(self, node: SimulatedNode, process: asyncssh.SSHServerProcess[bytes]) -> None:
        argv = shlex.split(process.command or "")
        if not argv:
            process.stderr.write(b"simulated nodes have no interactive shell\n")
            process.exit(1)
        elif is_agent_command(argv):
            argv = localise(node, argv)
            extra = self._simulation.agent_args(node.name) if self._simulation else []
            await run_local(node, process, [*argv, *extra], {}, self._cleanups)
        else:
            env = self._simulation.probe_env(node.name) if self._simulation else {}
            await run_local(node, process, argv, env, self._cleanups)


async def run_local(
    node: SimulatedNode,
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
