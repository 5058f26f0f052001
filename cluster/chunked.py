"""Replies larger than one NATS message: the first chunk answers, the rest are pulled.

NATS refuses messages over ``max_payload`` (1 MiB by default), and a month of a
shard's ledger or an export file can be larger. The shard answers a request with the
first chunk and the number of chunks; the asker pulls the others one request at a
time (``gpufleet.shard.K.chunk``), so a slow viewer is never flooded and the shard
never holds a half-read reply for long.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable

import msgspec

CHUNK_BYTES = 512 * 1024  # half the default max_payload: room for the envelope
KEEP_S = 120.0  # an unread reply is dropped after this long


class Chunk(msgspec.Struct, array_like=True, frozen=True):
    """Chunk ``seq`` of ``count`` of one reply (``token`` names the reply)."""

    token: str
    seq: int
    count: int
    data: bytes


class ChunkRequest(msgspec.Struct, array_like=True, frozen=True):
    """The asker wants chunk ``seq`` of the reply ``token``."""

    token: str
    seq: int


class ChunkError(Exception):
    """A chunked reply could not be put together (a chunk is missing or malformed)."""


_CHUNK = msgspec.msgpack.Decoder(Chunk)
_ASK = msgspec.msgpack.Decoder(ChunkRequest)
_ENCODE = msgspec.msgpack.Encoder()


class ChunkStore:
    """The shard's side: cuts replies into chunks and keeps the unread ones a while.

    Args:
        chunk_bytes: the most payload bytes in one chunk.
        clock: monotonic seconds.
    """

    def __init__(self, chunk_bytes: int = CHUNK_BYTES, clock: Callable[[], float] = time.monotonic):
        self.chunk_bytes = chunk_bytes
        self._clock = clock
        self._replies: dict[str, tuple[list[bytes], float]] = {}

    def first(self, data: bytes) -> bytes:
        """The encoded first chunk of ``data``; the others wait for :meth:`take`."""
        self._expire()
        size = self.chunk_bytes
        pieces = [data[i : i + size] for i in range(0, len(data), size)] or [b""]
        token = secrets.token_hex(8)
        if len(pieces) > 1:
            self._replies[token] = (pieces, self._clock() + KEEP_S)
        return _ENCODE.encode(Chunk(token, 0, len(pieces), pieces[0]))

    def take(self, raw: bytes) -> bytes:
        """The encoded chunk a :class:`ChunkRequest` asks for (empty data when unknown)."""
        self._expire()
        try:
            ask = _ASK.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return _ENCODE.encode(Chunk("", -1, 0, b""))
        pieces, _ = self._replies.get(ask.token, ([], 0.0))
        if not 0 < ask.seq < len(pieces):
            return _ENCODE.encode(Chunk(ask.token, -1, 0, b""))
        if ask.seq == len(pieces) - 1:
            del self._replies[ask.token]  # read to the end: nothing left to keep
        return _ENCODE.encode(Chunk(ask.token, ask.seq, len(pieces), pieces[ask.seq]))

    @property
    def pending(self) -> int:
        """Replies not read to the end yet."""
        return len(self._replies)

    def _expire(self) -> None:
        now = self._clock()
        for token in [t for t, (_, until) in self._replies.items() if until < now]:
            del self._replies[token]


Ask = Callable[[str, bytes], Awaitable[bytes]]


async def fetch_chunked(ask: Ask, subject: str, chunk_subject: str, payload: bytes) -> bytes:
    """Ask ``subject`` and pull every further chunk from ``chunk_subject``.

    Args:
        ask: one request/reply round trip (subject, payload) -> reply bytes.
        subject: where the request goes.
        chunk_subject: where further chunks are asked for.
        payload: the request.

    Raises:
        ChunkError: a chunk did not decode, or the shard no longer had it.
    """
    first = _decode(await ask(subject, payload))
    parts = [first.data]
    for seq in range(1, first.count):
        chunk = _decode(await ask(chunk_subject, _ENCODE.encode(ChunkRequest(first.token, seq))))
        if chunk.seq != seq or chunk.token != first.token:
            raise ChunkError(f"chunk {seq} of {first.count} is gone (asked too late?)")
        parts.append(chunk.data)
    return b"".join(parts)


def _decode(raw: bytes) -> Chunk:
    try:
        chunk = _CHUNK.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ChunkError(f"malformed chunk: {exc}") from None
    if chunk.seq < 0 or chunk.count < 1:
        raise ChunkError("the shard no longer holds that reply")
    return chunk
