"""A node's GPU processes over NATS: the owning shard's answer, bounded, and its check.

The node screen lists the compute processes of the node it shows. A local fleet runs
``gpufleet-agent processes`` over the node's own connection; an attached viewer asks
the shard that collects the node (``gpufleet.shard.K.processes``) and the shard answers
from that same read. The shard is trusted no more than a node: the reply is bounded
in bytes, entries and string lengths, every string goes through
:func:`collectors.sanitize.clean_text` on the viewer's side, and an answer about
another node than the one asked is refused.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from collectors.process_list import (
    COMMAND_CHARS,
    MAX_PROCESSES,
    USER_CHARS,
    GpuProcess,
    ProcessListing,
)
from collectors.protocol import INT64_MAX, MAX_EPOCH_S, Index
from collectors.sanitize import clean_text
from fleet.facade import RequestFailed, UnknownNode

# Under NATS's default max_payload (1 MiB) with room to spare: a node's usual listing
# is a few kB; 1,024 processes with 4,096-character commands would be 4 MiB and more.
MAX_REPLY_BYTES = 256 * 1024
_ENVELOPE_BYTES = 8 * 1024  # node name, error and headers around the entries
ERROR_CHARS = 1000
NODE_CHARS = 255

_Pid = Annotated[int, msgspec.Meta(ge=1, le=(1 << 31) - 1)]
_Bytes = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
# Characters, not bytes: a clean string can be longer than the text it replaced (ESC
# becomes four characters), so the shard sends what its own sanitiser produced.
_Command = Annotated[str, msgspec.Meta(max_length=COMMAND_CHARS)]
_User = Annotated[str, msgspec.Meta(max_length=USER_CHARS)]
_Text = Annotated[str, msgspec.Meta(max_length=ERROR_CHARS)]
_Node = Annotated[str, msgspec.Meta(max_length=NODE_CHARS)]


class WireProcess(msgspec.Struct, array_like=True, frozen=True):
    """One :class:`GpuProcess` on the wire."""

    gpu: Index
    pid: _Pid
    user: _User | None
    memory_used_bytes: _Bytes | None
    command: _Command | None


class ProcessAnswer(msgspec.Struct, array_like=True, frozen=True):
    """The shard's answer to ``processes``: the listing, or why there is none.

    ``refused``: the shard does not collect ``node`` (not its own, not adopted).
    ``left_out``: entries not sent to keep the reply under :data:`MAX_REPLY_BYTES`.
    """

    node: _Node
    taken_at: Annotated[float, msgspec.Meta(ge=0.0, le=MAX_EPOCH_S)]
    processes: Annotated[list[WireProcess], msgspec.Meta(max_length=MAX_PROCESSES)] = []
    error: _Text | None = None
    refused: bool = False
    left_out: Annotated[int, msgspec.Meta(ge=0, le=1 << 31)] = 0


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(ProcessAnswer)


def encode_listing(listing: ProcessListing, limit: int = MAX_REPLY_BYTES) -> bytes:
    """The shard's reply for ``listing``: entries in order while they fit in ``limit``."""
    budget = limit - _ENVELOPE_BYTES
    sent: list[WireProcess] = []
    for process in listing.processes[:MAX_PROCESSES]:
        wire = WireProcess(
            process.gpu,
            process.pid,
            _clean(process.user, USER_CHARS),
            process.memory_used_bytes,
            _clean(process.command, COMMAND_CHARS),
        )
        budget -= len(_ENCODER.encode(wire))
        if budget < 0:
            break
        sent.append(wire)
    answer = ProcessAnswer(
        clean_text(listing.node, NODE_CHARS),
        max(0.0, min(listing.taken_at, MAX_EPOCH_S)),
        sent,
        _clean(listing.error, ERROR_CHARS),
        left_out=len(listing.processes) - len(sent),
    )
    return _ENCODER.encode(answer)


def encode_failure(node: str, reason: str, now: float, *, refused: bool = False) -> bytes:
    """A reply without a listing: ``refused`` for a node this shard does not collect,
    else an empty listing that says why (the shard is busy)."""
    text = _clean(reason, ERROR_CHARS)
    answer = ProcessAnswer(clean_text(node, NODE_CHARS), now, error=text, refused=refused)
    return _ENCODER.encode(answer)


def decode_answer(node: str, data: bytes) -> ProcessListing:
    """The listing in a shard's reply about ``node``, checked and sanitised.

    Raises:
        UnknownNode: the shard does not collect ``node``.
        RequestFailed: the reply is too large, malformed, or about another node.
    """
    if len(data) > MAX_REPLY_BYTES:
        raise RequestFailed(f"the shard's process list of {len(data)} bytes is over the bound")
    try:
        answer = _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise RequestFailed(f"malformed process list: {clean_text(str(exc), 200)}") from None
    if answer.node != node:
        raise RequestFailed(f"the shard answered for {clean_text(answer.node, 80)}, not {node}")
    error = _clean(answer.error, ERROR_CHARS)
    if answer.refused:
        raise UnknownNode(error or f"{node} is not collected by that shard")
    if answer.left_out:
        more = f"{answer.left_out} more processes not sent (the reply is bounded)"
        error = f"{error}; {more}" if error else more
    processes = tuple(
        GpuProcess(
            gpu=p.gpu,
            pid=p.pid,
            user=_clean(p.user, USER_CHARS),
            memory_used_bytes=p.memory_used_bytes,
            command=_clean(p.command, COMMAND_CHARS),
        )
        for p in answer.processes
    )
    return ProcessListing(node, answer.taken_at, processes, error)


def _clean(text: str | None, limit: int) -> str | None:
    # A clean string within the limit comes back as itself: what the shard's own
    # runtime listed arrives unchanged.
    return None if text is None else clean_text(text, limit)
