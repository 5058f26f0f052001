"""Decoding the probe program's JSON lines (``probes/kernels/cli.py``) into typed messages."""

from __future__ import annotations

import msgspec


class HelloGpu(msgspec.Struct, frozen=True):
    """A probed device as the probe program names it."""

    index: int
    name: str


class Hello(msgspec.Struct, frozen=True, tag="hello", tag_field="type"):
    """First line after start-up: who is running, on what."""

    v: int
    pid: int
    pgid: int
    python: str
    torch: str
    cuda: str | None
    simulated: bool
    suite: str
    gpus: list[HelloGpu]


class Progress(msgspec.Struct, frozen=True, tag="progress", tag_field="type"):
    """A planned measurement finished."""

    probe: str
    gpu: int
    step: int
    steps: int
    message: str = ""


class Result(msgspec.Struct, frozen=True, tag="result", tag_field="type"):
    """One figure for one GPU (extra keys such as ``n`` or ``dtype`` are ignored)."""

    probe: str
    metric: str
    gpu: int
    value: float | None
    unit: str
    ok: bool = True
    detail: str = ""
    stand_in: str | None = None


class Skip(msgspec.Struct, frozen=True, tag="skip", tag_field="type"):
    """A probe that does not apply here (an all-reduce with one GPU)."""

    probe: str
    reason: str


class Error(msgspec.Struct, frozen=True, tag="error", tag_field="type"):
    """A failure: of one probe (``probe`` set) or of the whole run."""

    code: str
    message: str
    probe: str | None = None
    gpus: list[int] = msgspec.field(default_factory=list)


class Done(msgspec.Struct, frozen=True, tag="done", tag_field="type"):
    """The last line: ``ok``, ``incomplete``, ``timeout``, ``terminated`` or ``error``."""

    status: str
    elapsed_s: float = 0.0


ProbeMessage = Hello | Progress | Result | Skip | Error | Done
_decoder = msgspec.json.Decoder(ProbeMessage)


class ProbeProtocolError(ValueError):
    """A line from the probe is not valid probe protocol."""


def decode_line(line: bytes | str) -> ProbeMessage:
    """One line into its message.

    Raises:
        ProbeProtocolError: the line is not JSON or not a known message.
    """
    try:
        return _decoder.decode(line)
    except msgspec.DecodeError as exc:
        shown = line[:200] if isinstance(line, str) else line[:200].decode(errors="replace")
        raise ProbeProtocolError(f"not probe protocol ({exc}): {shown!r}") from None
