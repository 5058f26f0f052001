"""The agent's channel: bytes in, protocol lines out, and why it ended."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

import asyncssh

from collectors.protocol import MAX_LINE_BYTES, ProtocolError
from collectors.sanitize import clean_text
from collectors.ssh.errors import AgentExited

_STDERR_LINES_KEPT = 5
# The agent's stderr becomes the node's status reason, shown in the dashboard and logs:
# bounded per line and per chunk so a crashing (or hostile) agent cannot flood either.
_STDERR_LINE_CHARS = 300
_STDERR_CHUNK_BYTES = 8192


class AgentChannel(asyncssh.SSHClientSession[bytes]):
    """Splits the agent's stdout into lines and hands each to ``on_line``.

    A session callback rather than an ``SSHReader`` loop: at 1,000 nodes the
    per-message cost matters and this skips the reader's buffering and futures.
    ``ended`` resolves with the exception that describes why the channel closed.
    """

    def __init__(self, on_line: Callable[[bytes], None]) -> None:
        self._on_line = on_line
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
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            text = data[:_STDERR_CHUNK_BYTES].decode("utf-8", "replace")
            self._stderr.extend(
                clean_text(line.strip(), _STDERR_LINE_CHARS)
                for line in text.splitlines()[-_STDERR_LINES_KEPT:]
                if line.strip()
            )
            return
        lines = (self._pending + data).split(b"\n") if self._pending else data.split(b"\n")
        self._pending = lines.pop()
        if len(self._pending) > MAX_LINE_BYTES:
            self.fail(ProtocolError(f"a line grew past the {MAX_LINE_BYTES}-byte cap"))
            return
        for line in lines:
            if line.strip() and not self.ended.done():
                self._on_line(line)

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
        """The channel closed: resolve ``ended`` with the reason."""
        if exc is not None:
            self._finish(exc)
            return
        reason = self._exit or "agent channel closed"
        if self._stderr:
            reason += ": " + " | ".join(self._stderr)
        self._finish(AgentExited(reason))

    def _finish(self, exc: BaseException) -> None:
        if not self.ended.done():
            self.ended.set_result(exc)
