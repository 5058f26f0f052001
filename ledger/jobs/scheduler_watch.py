"""Asking the scheduler for job names and accounts on a schedule, for the live fleet.

The running fleet (``gpufleet.runtime.FleetRuntime``) holds one :class:`SchedulerWatch`
when a login node is configured (or a simulated one is given): a task that asks the
login node every ``[jobs] metadata_every_s`` through :class:`SlurmMetadata` (bounded,
cached), then tells the live jobs to describe themselves again, so a node whose jobs
gained a name or an account gets a new snapshot on the next tick and the others keep
theirs. A failed ask keeps the cache; each way of failing (``MetadataError.kind``) is
logged and noted once for the life of the process, never every minute, and never
stops the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from fleet.event_log import LogEntry
from fleet.jobs import LiveJobs
from fleet.settings.jobs_section import JobsSection
from ledger.jobs.slurm_meta import Runner, SlurmMetadata, describer

log = logging.getLogger(__name__)

# Where the notices of a simulated login node say they come from.
SIMULATED_LOGIN_NODE = "login-node"


class SchedulerWatch:
    """The login-node cache, the live jobs it describes and the task that refreshes it.

    Args:
        section: the [jobs] table (cadence, bounds, login node).
        run: how a command reaches the login node (``ledger.jobs.login_node.ssh_runner``
            or a simulated node's answer).
        clock: Unix time, the runtime's.
        note: where a notice goes (the operator's event log).
    """

    def __init__(
        self,
        section: JobsSection,
        run: Runner,
        clock: Callable[[], float],
        note: Callable[[LogEntry], None],
    ) -> None:
        self.metadata = SlurmMetadata(section, run)
        self.jobs = LiveJobs(describe=describer(self.metadata))
        self.source = section.login_node or SIMULATED_LOGIN_NODE
        self._every_s = section.metadata_every_s
        self._clock = clock
        self._note = note
        self._told: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self.asks = 0  # answers taken (failed or not), for tests and the curious

    def start(self) -> None:
        """Start asking (now, then every ``metadata_every_s``)."""
        if self._task is None:
            self._task = asyncio.create_task(self._ask_forever(), name="job-metadata")

    @property
    def running(self) -> bool:
        """True while the asking task runs."""
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Stop asking; an ask in flight is abandoned (its connection closed)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def ask(self) -> int:
        """Ask the login node once, now; the jobs it described."""
        now = self._clock()
        try:
            described = await self.metadata.refresh(now, force=True)
        except Exception:  # a bug here must not end job names for the rest of the run
            log.exception("job metadata refresh failed")
            self._tell("bug", "job metadata: an internal error (see the log)", now)
            return 0
        finally:
            self.asks += 1
        kind = self.metadata.last_error_kind
        if kind is not None:
            self._tell(kind, f"job metadata unavailable: {self.metadata.last_error}", now)
        elif described:
            self.jobs.redescribe()
        return described

    async def _ask_forever(self) -> None:
        while True:
            await self.ask()
            await asyncio.sleep(self._every_s)

    def _tell(self, kind: str, text: str, now: float) -> None:
        if kind in self._told:
            return
        self._told.add(kind)
        log.warning("%s (%s; said once)", text, self.source)
        self._note(LogEntry(now, self.source, "jobs", text, "warn"))
