"""One node's supervised life: connect, upload, run the agent, stream, retry."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable

import asyncssh

from collectors.protocol import Error, Hello, ProtocolError, Sample, decode_line
from collectors.sanitize import clean_text
from collectors.ssh.connect import connect_node
from collectors.ssh.errors import classify
from collectors.ssh.options import SshOptions
from collectors.ssh.pacing import LinePacer
from collectors.ssh.stream import AGENT_WINDOW, AgentChannel
from collectors.ssh.target import NodeTarget
from collectors.ssh.upload import (
    agent_mismatch,
    agent_missing,
    ensure_uploaded,
    remote_file,
    sha256_hex,
    verified_run_command,
)
from collectors.updates import NodeMessage, NodeStatus, NodeStatusChange, UpdateSink

log = logging.getLogger(__name__)

_CLOSE_TIMEOUT = 2.0
# Distinct protocol errors logged per node: a node repeating its garbage on every
# reconnect costs one log line, not one per reconnect.
_LOGGED_ERRORS_PER_NODE = 8
_REASON_CHARS = 1000


def agent_command(target: NodeTarget, remote_path: str, digest: str) -> str:
    """The remote command line that runs the agent, every piece shell-quoted.

    The node runs it only when the file's SHA-256 is ``digest`` (see
    :func:`collectors.ssh.upload.verified_run_command`).
    """
    args = [
        "--interval",
        repr(float(target.interval)),
        "--slow-interval",
        repr(float(target.slow_interval)),
        *target.agent_args,
    ]
    return verified_run_command(target.python, remote_path, digest, args)


class NodeSession:
    """Holds one node's connection and agent channel, and its current status.

    ``run`` never returns on its own: every failure becomes a status with a
    reason and a retry after a backoff; only cancellation ends it.

    The session reports facts and judges nothing: ``connecting`` until the agent's
    first line, ``streaming`` once lines flow on an open channel, or the error that
    ended an attempt, each with its time. Whether a silent node is stale or
    unreachable is :mod:`fleet.health.liveness`'s to say, from ``[health]``.

    Attributes:
        streaming_since: when the agent's channel opened (None: no channel open).
        last_line: when the last line arrived on this connection (None: none yet).
        last_sample: when the last sample or hello arrived (None: none this connection).
    """

    def __init__(
        self,
        target: NodeTarget,
        sink: UpdateSink,
        options: SshOptions,
        bundle: tuple[str, bytes],
        connects: asyncio.Semaphore,
        clock: Callable[[], float],
        pacer: LinePacer | None = None,
    ) -> None:
        self.target = target
        self._name = target.name
        self._pacer = pacer if pacer is not None else LinePacer()
        self._sink = sink
        self._options = options
        self._bundle = bundle
        self._digest = sha256_hex(bundle[1])  # once: the node checks the file against it
        self._connects = connects
        self._clock = clock
        # The module's generator, not one per node: a Random holds 2.5 KiB of state
        # (2.5 MiB at 1,000 nodes) to draw a few retry delays.
        self._jitter = random.random
        self.status: NodeStatusChange | None = None
        self.tried = False
        self.streaming_since: float | None = None
        self.last_sample: float | None = None
        self.last_line: float | None = None
        self._channel: AgentChannel | None = None
        self.conn: asyncssh.SSHClientConnection | None = None  # on-demand requests share it
        self._sink_failed = False
        self._logged_errors: set[str] = set()

    async def run(self) -> None:
        """Connect and stream until cancelled, retrying with backoff."""
        failures = 0
        self._set("connecting", f"connecting to {self.target.address}")
        while True:
            try:
                await self._connected_session()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                status, reason, expected = classify(exc)
                if not expected:
                    log.exception("node %s: unexpected error", self.target.name)
                # Only a failure to reach the node is a failed attempt (SLA evidence); a
                # bad agent or key is the monitor's trouble, reported by the status alone.
                self._set(status, reason, attempt_failed=status == "unreachable")
            self.tried = True
            failures = 1 if self.last_sample is not None else failures + 1
            self.last_sample = None
            await asyncio.sleep(self._options.backoff(failures, self._jitter()))

    async def _connected_session(self) -> None:
        async with self._connects:
            conn = await connect_node(self.target, self._options)
        self.conn = conn
        try:
            await self._agent_runs(conn)
        finally:
            self.conn = None
            conn.close()
            with contextlib.suppress(TimeoutError, asyncssh.Error, OSError):
                await asyncio.wait_for(conn.wait_closed(), _CLOSE_TIMEOUT)

    def agent_file(self) -> tuple[str, str]:
        """The agent's remote path and SHA-256, for one-shot agent commands."""
        return remote_file(self.target.remote_cache_dir, self._bundle[0]), self._digest

    async def _agent_runs(self, conn: asyncssh.SSHClientConnection) -> None:
        """Run the agent on ``conn`` again and again while the connection holds.

        The agent is started before anything is uploaded: usually it is already on
        the node. Only when Python cannot find the file is it uploaded, once.
        """
        name, content = self._bundle
        directory = self.target.remote_cache_dir
        command = agent_command(self.target, remote_file(directory, name), self._digest)
        failures = 0
        uploaded = False
        while True:
            ended = await self._agent_once(conn, command)
            mismatch = agent_mismatch(ended)
            if not uploaded and (mismatch or agent_missing(ended)):
                if mismatch:
                    log.warning("node %s: %s; uploading it again", self.target.name, ended)
                await ensure_uploaded(
                    conn, name, content, directory, replace=mismatch, python=self.target.python
                )
                uploaded = True
                continue
            status, reason, expected = classify(ended)
            if status == "unreachable" or status == "protocol-error" or not expected:
                raise ended  # the connection is suspect: reconnect from scratch
            self.tried = True
            self._set(status, f"{reason}; restarting")
            failures = 1 if self.last_sample is not None else failures + 1
            self.last_sample = None
            await asyncio.sleep(self._options.backoff(failures, self._jitter()))

    async def _agent_once(self, conn: asyncssh.SSHClientConnection, command: str) -> BaseException:
        session = AgentChannel(self._on_line, self._pacer)
        chan, _ = await conn.create_session(
            lambda: session, command, encoding=None, window=AGENT_WINDOW
        )
        self._channel = session
        self.streaming_since = self._clock()
        try:
            return await session.ended
        finally:
            self._channel = None
            self.streaming_since = None
            chan.close()

    def _on_line(self, line: bytes) -> None:
        # Once per node message (~1,000 a second): the sink is called inline, and
        # nothing is built but the decoded message and its envelope.
        try:
            message = decode_line(line)
        except ProtocolError as exc:
            self._log_protocol_error(exc)
            if self._channel is not None:
                self._channel.fail(exc)
            return
        self.last_line = now = self._clock()
        if isinstance(message, Sample):
            self.last_sample = now
            status = self.status
            if status is None or status.status != "streaming":
                self._set("streaming", f"samples flowing from {self.target.address}")
        elif isinstance(message, Hello):
            self.last_sample = now
            self._set("streaming", f"agent {message.agent} started on {message.host}")
        elif isinstance(message, Error) and message.fatal:
            self._set("agent-error", f"agent error {message.code}: {message.message}")
        try:
            self._sink(NodeMessage(self._name, message, now))
        except Exception:
            self._sink_raised()

    def _log_protocol_error(self, exc: ProtocolError) -> None:
        reason = str(exc)  # already clean and bounded
        if reason in self._logged_errors or len(self._logged_errors) >= _LOGGED_ERRORS_PER_NODE:
            return
        self._logged_errors.add(reason)
        log.warning("node %s: protocol error: %s", self.target.name, reason)

    def _set(self, status: NodeStatus, reason: str, *, attempt_failed: bool = False) -> None:
        # Reasons quote exceptions, stderr and agent strings: one more pass costs nothing.
        reason = clean_text(reason, _REASON_CHARS)
        current = self.status
        same = current is not None and current.status == status and current.reason == reason
        if same and not attempt_failed:
            return
        change = NodeStatusChange(self.target.name, status, reason, self._clock(), attempt_failed)
        self.status = change
        self._deliver(change)

    def _deliver(self, update: NodeStatusChange | NodeMessage) -> None:
        try:
            self._sink(update)
        except Exception:
            self._sink_raised()

    def _sink_raised(self) -> None:
        # The consumer's bug must not look like a node fault; log it once per node.
        if not self._sink_failed:
            self._sink_failed = True
            log.exception("node %s: the update sink raised", self.target.name)
