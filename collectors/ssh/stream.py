"""The agent's channel: bytes in, protocol lines out, and why it ended."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

import asyncssh

from collectors.protocol import MAX_LINE_BYTES, ProtocolError
from collectors.sanitize import clean_text
from collectors.ssh.channel_data import accept_fast_data
from collectors.ssh.errors import AgentExited
from collectors.ssh.pacing import LinePacer

_STDERR = asyncssh.EXTENDED_DATA_STDERR
_STDERR_LINES_KEPT = 5
# The agent's stderr becomes the node's status reason, shown in the dashboard and logs:
# bounded per line and per chunk so a crashing (or hostile) agent cannot flood either.
_STDERR_LINE_CHARS = 300
_STDERR_CHUNK_BYTES = 8192
# Lines queued in the pacer per channel before the channel stops reading, and the
# level at which it reads again: a node 8 samples behind gains nothing from a longer
# queue, and at 1,000 nodes every queued line is ~1.7 KB of the controller's memory.
_PAUSE_AT_LINES = 8
_RESUME_AT_LINES = 2
AGENT_WINDOW = 64 * 1024
"""SSH receive window of the agent channel: what a paused channel may buffer (asyncssh's
default, 2 MiB, would let a fleet that fell behind buffer gigabytes). The controller
sends a window adjust (a write to the node's socket) each time half of it is used: at
32 KiB that was one write every ~9 messages of ~1.7 KB, about a third of the read
path's CPU in a profile at 300 nodes; 64 KiB halves them, and a paused fleet of 1,000
nodes still buffers at most 64 MiB. It holds ~35 samples, and two of asyncssh's
largest packets."""


@accept_fast_data
class AgentChannel(asyncssh.SSHClientSession[bytes]):
    """Splits the agent's stdout into lines and hands each to ``on_line``.

    A session callback rather than an ``SSHReader`` loop: at 1,000 nodes the
    per-message cost matters and this skips the reader's buffering and futures.
    Lines go through ``pacer`` (:mod:`collectors.ssh.pacing`), which hands them
    back to ``on_line`` a bounded slice per loop turn; without one the channel
    makes its own. ``ended`` resolves with the exception that describes why the
    channel closed, after every line received before the close was handled.
    """

    def __init__(self, on_line: Callable[[bytes], None], pacer: LinePacer | None = None) -> None:
        self._on_line = on_line
        self._pacer = pacer if pacer is not None else LinePacer()
        self._queued = 0
        self._paused = False
        self._closed_by: BaseException | None = None  # set while queued lines remain
        self._pending = b""
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES_KEPT)
        self._exit = ""
        self._chan: asyncssh.SSHClientChannel[bytes] | None = None
        self.ended: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

    def connection_made(self, chan: asyncssh.SSHClientChannel[bytes]) -> None:
        """Keep the channel so a protocol failure can close it."""
        self._chan = chan

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        """Split stdout into lines; keep the last few stderr lines for the exit reason."""
        if datatype == _STDERR:
            text = data[:_STDERR_CHUNK_BYTES].decode("utf-8", "replace")
            self._stderr.extend(
                clean_text(line.strip(), _STDERR_LINE_CHARS)
                for line in text.splitlines()[-_STDERR_LINES_KEPT:]
                if line.strip()
            )
            return
        if self._pending:
            data = self._pending + data
            self._pending = b""
        # A line is kept unless it is empty or all whitespace: ``isspace`` answers at the
        # first byte of a JSON line, where ``strip`` copied every line.
        if data.find(b"\n") == len(data) - 1:
            # The usual read: the agent flushes a message at a time, one packet each.
            line = data[:-1]
            lines = [line] if line and not line.isspace() else []
        else:
            lines = data.split(b"\n")
            self._pending = lines.pop()
            if len(self._pending) > MAX_LINE_BYTES:
                self.fail(ProtocolError(f"a line grew past the {MAX_LINE_BYTES}-byte cap"))
                return
            lines = [line for line in lines if line and not line.isspace()]
        if not lines or self.ended.done():
            return
        self._queued += len(lines)
        self._pacer.offer(self, lines)
        if self._queued > _PAUSE_AT_LINES and not self._paused and self._chan is not None:
            self._paused = True
            self._chan.pause_reading()

    def deliver(self, line: bytes) -> None:
        """Handle one queued line (called by the pacer, in order)."""
        self._queued -= 1
        # done(), not a flag: a cancelled reader cancels ``ended`` from outside.
        if not self.ended.done():
            self._on_line(line)
        if self._paused and self._queued <= _RESUME_AT_LINES and self._chan is not None:
            self._paused = False
            self._chan.resume_reading()
        if self._queued == 0 and self._closed_by is not None:
            self._finish(self._closed_by)

    def fail(self, exc: BaseException) -> None:
        """End the channel because of ``exc`` (a protocol violation or a bug)."""
        self._finish(exc)
        if self._chan is not None:
            self._chan.close()

    def exit_status_received(self, status: int) -> None:
        """Remember how the agent exited."""
        self._exit = f"agent exited with status {status}"

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        """Remember the signal that killed the agent."""
        self._exit = f"agent killed by signal {signal}"

    def connection_lost(self, exc: Exception | None) -> None:
        """The channel closed: resolve ``ended`` with the reason once queued lines are handled."""
        if exc is None:
            reason = self._exit or "agent channel closed"
            if self._stderr:
                reason += ": " + " | ".join(self._stderr)
            exc = AgentExited(reason)
        if self._queued > 0:
            self._closed_by = exc  # the agent's last words (an error, bye) come first
            return
        self._finish(exc)

    def _finish(self, exc: BaseException) -> None:
        if not self.ended.done():
            self.ended.set_result(exc)
