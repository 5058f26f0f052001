"""The fleet transport: one supervised task per node, updates into one sink."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from collectors.ssh.node import NodeSession
from collectors.ssh.options import SshOptions
from collectors.ssh.pacing import LinePacer
from collectors.ssh.target import NodeTarget
from collectors.tasks import cancel_all
from collectors.updates import NodeStatusChange, UpdateSink

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0
"""How long :meth:`SshFleet.stop` waits for cancelled node tasks before cancelling again:
longer than a session's own closing of its connection (2 s), which it leaves alone."""


class SshFleet:
    """Streams every node's agent over SSH and reports updates to ``sink``.

    ``sink`` is called on the event loop's thread, once per decoded message and
    once per status change; it should be quick (lines are handled in slices of
    :data:`collectors.ssh.pacing.SLICE_S` per loop turn, sink calls included).
    """

    def __init__(
        self,
        targets: Sequence[NodeTarget],
        sink: UpdateSink,
        options: SshOptions | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        names = [target.name for target in targets]
        if len(set(names)) != len(names):
            raise ValueError("node names must be unique")
        self._targets = list(targets)
        self._sink = sink
        self._options = options or SshOptions()
        self._clock = clock
        self._sessions: dict[str, NodeSession] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._pacer = LinePacer()  # one for the fleet: the slice bounds all nodes' lines together

    async def start(self) -> None:
        """Start one task per node; returns at once."""
        if self._tasks:
            raise RuntimeError("SshFleet already started")
        bundle = self._options.agent_bundle
        if bundle is None:
            bundle = await asyncio.to_thread(_build_agent_bundle)
        connects = asyncio.Semaphore(self._options.max_concurrent_connects)
        for target in self._targets:
            session = NodeSession(
                target, self._sink, self._options, bundle, connects, self._clock, self._pacer
            )
            self._sessions[target.name] = session
            task = asyncio.create_task(session.run(), name=f"ssh-node:{target.name}")
            task.add_done_callback(self._task_ended)
            self._tasks.append(task)

    async def stop(self) -> None:
        """Close every channel and connection; no task is left running afterwards."""
        tasks, self._tasks = self._tasks, []
        await cancel_all(tasks, STOP_GRACE_S)

    def take_queued_lines(self) -> None:
        """Handle the lines already read and queued, before a tick (one slice at most)."""
        self._pacer.drain_now()

    def statuses(self) -> Mapping[str, NodeStatusChange]:
        """The latest status change of every node that has one."""
        return {
            name: session.status
            for name, session in self._sessions.items()
            if session.status is not None
        }

    def session(self, name: str) -> NodeSession | None:
        """The supervised session of node ``name`` (None for a node not in the fleet)."""
        return self._sessions.get(name)

    @property
    def tried_all(self) -> bool:
        """Whether every node has streamed or failed at least once (readiness)."""
        return bool(self._sessions) and all(
            session.tried or session.last_sample is not None for session in self._sessions.values()
        )

    async def __aenter__(self) -> SshFleet:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def _task_ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        # Node tasks catch everything; reaching here is a bug and must not be silent.
        log.error("task %s ended unexpectedly", task.get_name(), exc_info=exc)


def _build_agent_bundle() -> tuple[str, bytes]:
    # Imported here: zipping takes a moment and only a real agent run needs it.
    from collectors.bundle import agent_zipapp_bytes

    name, content = agent_zipapp_bytes()
    return name, content
