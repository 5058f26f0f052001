"""Running a probe suite on a node from the controller: ship, start, stream, stop.

One run at a time per node (an ``asyncio.Lock`` per node name). A run opens its own
SSH connection (the telemetry stream is left alone), uploads ``probes-<sha12>.pyz``
to the node's cache directory when it is missing, starts it with the node's probe
Python and streams typed events to a callback. The time limit is enforced twice:
by the probe (``--timeout``) and here (the limit plus a start-up grace). Cancelling
or running out of time closes the channel and ends the probe's process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import asyncssh

from collectors.ssh.connect import HostKeyMismatchError
from collectors.ssh.upload import ensure_uploaded, sha256_hex
from probes.bundle import ProbeBundle, build_probe_bundle
from probes.collect import ProgressCallback, RunCollector
from probes.command import kill_command, probe_command
from probes.messages import ProbeProtocolError, decode_line
from probes.repeats import confirm_stragglers
from probes.report import ProbeReport, Suite
from probes.settings import ProbeSettings
from probes.verdicts import judge

log = logging.getLogger(__name__)
MAX_LINE = 1 << 20  # a probe line is a few hundred bytes; anything huge is not ours
EXIT_NOT_FOUND = 127  # sh: the probe Python does not exist
EXIT_GRACE_S = 10.0  # after its last line, how long a probe may take to exit


class ProbeTarget(Protocol):
    """What the runner needs of a node (``collectors.ssh.NodeTarget`` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def remote_cache_dir(self) -> str: ...


Connector = Callable[[ProbeTarget], Awaitable[asyncssh.SSHClientConnection]]


@dataclass(eq=False)
class _ActiveRun:
    task: asyncio.Task[ProbeReport] | None
    conn: asyncssh.SSHClientConnection | None = None
    collector: RunCollector | None = None
    cancel_requested: bool = False


class ProbeRunner:
    """Runs probe suites on nodes, one run per node at a time.

    Args:
        connect: opens an SSH connection to a node (e.g. ``collectors.ssh.connect_node``
            with the fleet's ``SshOptions``); the runner closes it after the run.
        settings: how probes run.
        bundle: the probe zipapp; built from ``probes/kernels`` when omitted.
    """

    def __init__(
        self,
        connect: Connector,
        settings: ProbeSettings | None = None,
        bundle: ProbeBundle | None = None,
    ) -> None:
        self._connect = connect
        self.settings = settings or ProbeSettings()
        self.bundle = bundle or build_probe_bundle()
        self._locks: dict[str, asyncio.Lock] = {}
        self._active: dict[str, _ActiveRun] = {}

    def busy(self, node: str) -> bool:
        """True while a run on ``node`` is in flight."""
        return node in self._active

    def cancel(self, node: str) -> bool:
        """Stop the run in flight on ``node``; its ``run`` returns a ``cancelled`` report.

        Returns:
            False when nothing was running on ``node``.
        """
        active = self._active.get(node)
        if active is None or active.task is None:
            return False
        active.cancel_requested = True
        active.task.cancel()
        return True

    async def run(
        self,
        target: ProbeTarget,
        suite: Suite = "quick",
        on_progress: ProgressCallback | None = None,
        peers: Sequence[ProbeReport] = (),
    ) -> ProbeReport:
        """Run ``suite`` on ``target`` and return its judged report.

        The verdicts judge the node's GPUs against their datasheet, against each other
        and against ``peers`` (other nodes' latest reports, for fleet stragglers); an
        ``unsure`` straggler is measured again before the report is returned.
        Transport failures are a report with status ``error``, never an exception.
        """
        lock = self._locks.setdefault(target.name, asyncio.Lock())
        async with lock:
            active = _ActiveRun(task=asyncio.current_task())
            self._active[target.name] = active
            try:
                report = await self._run(target, suite, on_progress, active)
                return await confirm_stragglers(
                    report,
                    lambda r: self.judge([*peers, r])[-1],
                    lambda gpus: self._run(target, suite, on_progress, active, gpus),
                    self.settings.straggler_repeats,
                    on_progress,
                    lambda: active.cancel_requested,
                )
            finally:
                del self._active[target.name]

    async def run_fleet(
        self,
        targets: Sequence[ProbeTarget],
        suite: Suite = "quick",
        on_progress: ProgressCallback | None = None,
        concurrency: int = 8,
    ) -> tuple[ProbeReport, ...]:
        """Run ``suite`` on every target (``concurrency`` nodes at a time), judged as one fleet.

        Returns:
            One report per target, in order, with fleet-relative straggler verdicts.
        """
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(target: ProbeTarget) -> ProbeReport:
            async with gate:
                return await self.run(target, suite, on_progress)

        reports = await asyncio.gather(*(one(t) for t in targets))
        return self.judge(reports)

    def judge(self, reports: Iterable[ProbeReport]) -> tuple[ProbeReport, ...]:
        """``probes.verdicts.judge`` with this runner's settings."""
        s = self.settings
        return judge(
            list(reports),
            s.expected,
            slow_fraction=s.slow_fraction,
            straggler_fraction=s.straggler_fraction,
        )

    async def _run(
        self,
        target: ProbeTarget,
        suite: Suite,
        on_progress: ProgressCallback | None,
        active: _ActiveRun,
        gpus: str | None = None,
    ) -> ProbeReport:
        python = self.settings.python_for(target.name)
        collector = RunCollector(target.name, suite, python, on_progress)
        active.collector = collector
        try:
            active.conn = await self._connect(target)
            if active.cancel_requested:
                # Python 3.11's wait_for (asyncssh's connect waits under it) drops a
                # cancellation that arrives with its result: the flag still tells.
                raise asyncio.CancelledError
            await self._execute(target, suite, python, collector, active, gpus)
        except asyncio.CancelledError:
            await self._stop(active)
            task = asyncio.current_task()
            if not active.cancel_requested or task is None:
                raise
            task.uncancel()
            collector.fail_run("cancelled", "cancelled", "cancelled by the operator")
        except (OSError, asyncssh.Error, HostKeyMismatchError) as exc:
            collector.fail_run("error", "unreachable", f"{target.name}: {_describe(exc)}")
        except Exception:
            await self._stop(active)  # a bug (e.g. in the callback) must not orphan the probe
            raise
        finally:
            if active.conn is not None:
                active.conn.close()
        return collector.report()

    async def _execute(
        self,
        target: ProbeTarget,
        suite: Suite,
        python: str,
        collector: RunCollector,
        active: _ActiveRun,
        gpus: str | None = None,
    ) -> None:
        assert active.conn is not None
        # Probes are rare and operator-asked: upload every time, so a file planted under
        # the bundle's name is replaced; the bootstrap still checks the hash before exec.
        path = await ensure_uploaded(
            active.conn,
            self.bundle.name,
            self.bundle.content,
            target.remote_cache_dir,
            replace=True,
            python=python,  # the exec-channel upload on nodes without SFTP
        )
        s = self.settings
        digest = sha256_hex(self.bundle.content)
        selection = gpus if gpus is not None else s.gpus
        command = probe_command(python, path, digest, suite, s.timeout_s, selection, s.allow_cpu)
        process = await active.conn.create_process(command, encoding="utf-8", errors="replace")
        stderr_tail: deque[str] = deque(maxlen=20)
        drain = asyncio.create_task(_drain(process.stderr, stderr_tail))
        limit = s.timeout_s + s.startup_grace_s
        try:
            await self._follow(process, collector, active, limit)
            await asyncio.wait({drain}, timeout=1.0)  # the last stderr lines, for the reason
        finally:
            drain.cancel()
        if collector.done is None and collector.status is None:
            collector.fail_run(
                "error", "exited", _exit_reason(target.name, python, process, stderr_tail)
            )

    async def _follow(
        self,
        process: asyncssh.SSHClientProcess[str],
        collector: RunCollector,
        active: _ActiveRun,
        limit: float,
    ) -> None:
        """Stream the lines within ``limit`` seconds, then let the probe exit."""
        try:
            async with asyncio.timeout(limit):
                await _stream(process.stdout, collector)
        except TimeoutError:
            await self._stop(active)
            collector.fail_run("timeout", "timeout", f"no complete result within {limit:g}s")
            return
        try:
            # The results are in; a probe stuck in teardown (a hung CUDA context) is ended.
            await asyncio.wait_for(process.wait_closed(), EXIT_GRACE_S)
        except TimeoutError:
            await self._stop(active)

    async def _stop(self, active: _ActiveRun) -> None:
        """End the probe's process group over a second channel, then drop the connection."""
        conn, collector = active.conn, active.collector
        if conn is None or collector is None or collector.pid is None:
            return
        with contextlib.suppress(OSError, asyncssh.Error, TimeoutError):
            await asyncio.wait_for(conn.run(kill_command(collector.pid), check=False), 10.0)


async def _stream(stdout: asyncssh.SSHReader[str], collector: RunCollector) -> None:
    """Feed every line to the collector until ``done`` or end of output."""
    first = True
    async for line in stdout:
        text = line.strip()
        if first and text.isdigit():
            collector.pid = int(text)  # the shell's `echo $$`: the probe's pid
            first = False
            continue
        first = False
        if not text or len(text) > MAX_LINE:
            continue
        try:
            collector.accept(decode_line(text))
        except ProbeProtocolError as exc:
            # NCCL_DEBUG and some libraries print to stdout; noise is not a finding.
            log.debug("%s: %s", collector.node, exc)
        if collector.done is not None:
            return


async def _drain(stderr: asyncssh.SSHReader[str], tail: deque[str]) -> None:
    # Keeps the channel's stderr window open and the last lines for an error message.
    with contextlib.suppress(asyncssh.Error, OSError):
        async for line in stderr:
            tail.append(line.rstrip())


def _exit_reason(
    node: str, python: str, process: asyncssh.SSHClientProcess[str], stderr: deque[str]
) -> str:
    status = process.exit_status
    if status == EXIT_NOT_FOUND:
        return f"probe_python {python!r} was not found on {node}: set [probes] probe_python"
    last = stderr[-1] if stderr else "no output"
    return f"probe on {node} exited with status {status} before finishing: {last}"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
