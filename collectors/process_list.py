"""The controller's view of ``gpufleet-agent processes``: decoded, checked, sanitised.

The answer is one protocol line of type ``processes``. Like every node line it is
hostile until checked: sizes and ranges are declared on the wire structs (msgspec
rejects the rest), and every string (the user name, the command line, NVML error
names) goes through :func:`collectors.sanitize.clean_text`, so a command line that
carries terminal escape sequences reaches the dashboard as visible ``\\x1b`` text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import msgspec

from collectors.protocol import (
    INT64_MAX,
    MAX_EPOCH_S,
    MAX_LINE_BYTES,
    Index,
    ProtocolError,
    Word,
)
from collectors.sanitize import clean_text

MAX_PROCESSES = 1024  # the agent sends at most this many (agent/processes.py)
COMMAND_CHARS = 4096
USER_CHARS = 64

_Pid = Annotated[int, msgspec.Meta(ge=1, le=(1 << 31) - 1)]
_Uid = Annotated[int, msgspec.Meta(ge=0, le=(1 << 32) - 1)]
_Bytes = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
_Str = Annotated[str, msgspec.Meta(max_length=COMMAND_CHARS * 4)]


class _WireProcess(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    gpu: Index
    pid: _Pid
    uid: _Uid | None = None
    user: _Str | None = None
    memory_used_bytes: _Bytes | None = None
    command: _Str | None = None


class _WireError(msgspec.Struct, frozen=True):
    gpu: Index | None
    error: Word


class _WireListing(msgspec.Struct, frozen=True, tag_field="type", tag="processes"):
    v: Literal[1]
    t: Annotated[float, msgspec.Meta(ge=0.0, le=MAX_EPOCH_S)]
    processes: Annotated[list[_WireProcess], msgspec.Meta(max_length=MAX_PROCESSES)]
    errors: Annotated[list[_WireError], msgspec.Meta(max_length=1024)] = []


_decoder = msgspec.json.Decoder(_WireListing)


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """One compute process on one GPU (a process on two GPUs is two entries).

    ``user`` and ``command`` are None when the process ended before /proc was read.
    """

    gpu: int
    pid: int
    user: str | None
    memory_used_bytes: int | None
    command: str | None


@dataclass(frozen=True, slots=True)
class ProcessListing:
    """What one ``processes`` request found on a node.

    ``error`` says why the listing is empty or partial (unreachable node, an agent
    without the command, a GPU whose query failed); ``taken_at`` is the node's time.
    """

    node: str
    taken_at: float
    processes: tuple[GpuProcess, ...] = ()
    error: str | None = None


def decode_listing(node: str, line: bytes) -> ProcessListing:
    """The listing in ``line`` (the agent's stdout), checked and sanitised.

    Raises:
        ProtocolError: the line is not a valid ``processes`` message.
    """
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"processes line of {len(line)} bytes is over the cap")
    try:
        wire = _decoder.decode(line)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not a processes message: {clean_text(str(exc), 200)}") from None
    processes = tuple(
        GpuProcess(
            gpu=p.gpu,
            pid=p.pid,
            user=_user(p),
            memory_used_bytes=p.memory_used_bytes,
            command=clean_text(p.command, COMMAND_CHARS) if p.command is not None else None,
        )
        for p in wire.processes
    )
    failed = [
        f"GPU {e.gpu}: {clean_text(e.error)}" if e.gpu is not None else clean_text(e.error)
        for e in wire.errors
    ]
    error = "; ".join(failed) if failed else None
    return ProcessListing(node, wire.t, processes, error)


def _user(process: _WireProcess) -> str | None:
    if process.user is not None:
        return clean_text(process.user, USER_CHARS)
    return str(process.uid) if process.uid is not None else None
