"""A loopback asyncssh server that writes a seeded byte stream, and what watches it arrive.

For the tests of ``collectors/ssh/channel_data`` (and its benchmark): the server runs
``stream SEED BYTES`` by writing a deterministic mix of small and large chunks to
stdout and stderr, all at once (so reads hold many packets), then exits with status
0; ``wait`` first reads a line from stdin (the client says when). The client side
records every delivery, re-cuts reads to split packets across them, counts what
asyncssh's own handlers saw (a byte flipped on the way: testkit.loopback.relay).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncssh
from asyncssh.channel import SSHChannel, SSHClientChannel
from asyncssh.constants import (
    MSG_CHANNEL_DATA,
    MSG_CHANNEL_EXTENDED_DATA,
    MSG_CHANNEL_WINDOW_ADJUST,
)

from collectors.ssh import channel_data
from collectors.ssh.channel_data import accept_fast_data

STDERR = asyncssh.EXTENDED_DATA_STDERR
# Sizes of the server's writes: one-byte and line-sized packets, and writes larger
# than a packet (asyncssh splits them at the peer's 32 KiB maximum).
_CHUNK_SIZES = (1, 7, 100, 1700, 1700, 1700, 5000, 40000)
_STDERR_SHARE = 0.05
Chunk = tuple[int | None, bytes]  # (data type: None for stdout, the bytes)
ENDING = ["exit 0", "lost None"]  # a stream's channel events after its data, EOF aside


def script(seed: int, total: int) -> list[Chunk]:
    """The chunks ``stream SEED TOTAL`` writes, in order."""
    rng = random.Random(seed)
    chunks: list[Chunk] = []
    written = 0
    while written < total:
        size = min(rng.choice(_CHUNK_SIZES), total - written)
        datatype = STDERR if rng.random() < _STDERR_SHARE else None
        chunks.append((datatype, rng.randbytes(size)))
        written += size
    return chunks


def coalesced(chunks: list[Chunk]) -> list[Chunk]:
    """Consecutive chunks of one data type joined: what a byte stream must preserve."""
    joined: list[tuple[int | None, bytearray]] = []
    for datatype, data in chunks:
        if joined and joined[-1][0] == datatype:
            joined[-1][1].extend(data)
        else:
            joined.append((datatype, bytearray(data)))
    return [(datatype, bytes(data)) for datatype, data in joined]


class _OpenServer(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return False  # loopback test server: no authentication


async def _serve(process: asyncssh.SSHServerProcess[bytes]) -> None:
    words = (process.command or "").split()
    if words[:1] == ["wait"]:
        await process.stdin.readline()
        words = words[1:]
    seed, total = int(words[1]), int(words[2])
    for datatype, data in script(seed, total):
        (process.stderr if datatype == STDERR else process.stdout).write(data)
    await process.stdout.drain()
    process.exit(0)


async def listen(**options: Any) -> asyncssh.SSHAcceptor:
    """A stream server on an ephemeral loopback port (``options`` go to asyncssh.listen)."""
    return await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[asyncssh.generate_private_key("ssh-ed25519")],
        server_factory=_OpenServer,
        process_factory=_serve,
        encoding=None,
        **options,
    )


@accept_fast_data
class StreamRecorder(asyncssh.SSHClientSession[bytes]):
    """Every delivery with the receive window after it, and how the channel ended.

    Args:
        pause_after: bytes after which the session pauses reading (None: never).
    """

    def __init__(self, pause_after: int | None = None) -> None:
        self.chunks: list[Chunk] = []
        self.windows: list[int] = []
        self.events: list[str] = []
        self.ciphers: list[object] = []  # the connection's receive cipher, as it changes
        self.received = 0
        self.pause_after = pause_after
        self.closed = asyncio.Event()
        self.chan: Any = None

    def connection_made(self, chan: Any) -> None:
        self.chan = chan

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        self.chunks.append((datatype, data))
        self.windows.append(self.chan._recv_window)
        cipher = self.chan._conn._recv_encryption
        if not self.ciphers or self.ciphers[-1] is not cipher:
            self.ciphers.append(cipher)
        self.received += len(data)
        if self.pause_after is not None and self.received >= self.pause_after:
            self.pause_after = None
            self.chan.pause_reading()

    def eof_received(self) -> bool:
        self.events.append("eof")
        return False

    def exit_status_received(self, status: int) -> None:
        self.events.append(f"exit {status}")

    def connection_lost(self, exc: Exception | None) -> None:
        self.events.append(f"lost {exc!r}")
        self.closed.set()


@dataclass
class ReadCutter:
    """Re-cuts every read of a client connection at seeded points, as a slow link would.

    Records, per piece handed to asyncssh, how many packets it completed and whether
    bytes of an unfinished packet were left over.
    """

    conn: Any
    seed: int
    packets_per_piece: list[int] = field(default_factory=list)
    left_over: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._deliver: Callable[[bytes], None] = self.conn.data_received
        self._rng = random.Random(self.seed)
        self.conn.data_received = self

    def __call__(self, data: bytes, datatype: asyncssh.DataType = None) -> None:
        start = 0
        while start < len(data):
            size = self._rng.choice((1, 3, 17, 200, 1700, 5000, len(data)))
            seq = self.conn._recv_seq
            self._deliver(data[start : start + size])
            start += size
            self.packets_per_piece.append((self.conn._recv_seq - seq) & 0xFFFFFFFF)
            self.left_over.append(bool(self.conn._inpbuf))


class HandlerCounts:
    """Channel data packets that reached asyncssh's own handlers on a client channel,
    and the window adjusts client channels sent."""

    def __init__(self, monkeypatch: Any) -> None:
        self.data = 0
        self.extended = 0
        self.adjusts: list[int] = []
        handlers = SSHChannel._packet_handlers
        for pkttype, name in ((MSG_CHANNEL_DATA, "data"), (MSG_CHANNEL_EXTENDED_DATA, "extended")):
            monkeypatch.setitem(handlers, pkttype, self._counting(handlers[pkttype], name))
        send = SSHChannel.send_packet

        def sending(chan: SSHChannel[Any], pkttype: int, *args: bytes) -> None:
            if pkttype == MSG_CHANNEL_WINDOW_ADJUST and isinstance(chan, SSHClientChannel):
                self.adjusts.append(int.from_bytes(args[0], "big"))
            send(chan, pkttype, *args)

        monkeypatch.setattr(SSHChannel, "send_packet", sending)

    def _counting(self, handler: Callable[..., Any], name: str) -> Callable[..., Any]:
        def counted(chan: SSHChannel[Any], *args: Any) -> Any:
            if isinstance(chan, SSHClientChannel):
                setattr(self, name, getattr(self, name) + 1)
            return handler(chan, *args)

        return counted


@dataclass
class Run:
    """What one stream delivered, and what asyncssh's handlers and the reads saw."""

    recorder: StreamRecorder
    counts: HandlerCounts
    cutter: ReadCutter | None
    packets: int  # the connection's receive sequence number at the end
    writes: int  # the client's transport writes from the session's open to its end

    @property
    def data_packets(self) -> int:
        """Channel data packets delivered (one delivery each, pauses aside)."""
        return len(self.recorder.chunks)

    @property
    def ending(self) -> list[str]:
        """The channel's events without EOF: whether the server's EOF precedes its close
        depends on when its last write drained (server side), with or without the fast path."""
        return [event for event in self.recorder.events if event != "eof"]


@contextlib.asynccontextmanager
async def fast_path(on: bool) -> AsyncIterator[None]:
    """The channel-data fast path on (as installed) or off (asyncssh as shipped) inside."""
    if not on:
        channel_data.uninstall()
    try:
        yield
    finally:
        channel_data.install()


def count_writes(conn: Any) -> list[int]:
    """The sizes of the connection's transport writes from now on."""
    transport = conn._transport
    write, writes = transport.write, []

    def counted(data: bytes) -> None:
        writes.append(len(data))
        write(data)

    transport.write = counted
    return writes
