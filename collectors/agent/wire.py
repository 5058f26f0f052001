"""Protocol v1 on the wire: one compact JSON object per line, flushed per message.

The message shapes are exactly the structs of ``collectors/protocol.py`` (which the
controller decodes with msgspec); this module builds them as plain dicts so the
node needs nothing beyond the standard library.
"""

from __future__ import annotations

import json
import math
import threading
from typing import IO, Any, Dict, List, Optional

from collectors.agent.fields import PROTOCOL_VERSION

Message = Dict[str, Any]

# Compact separators: a sample is mostly numbers, so ", " and ": " would add ~20%.
_encoder = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


class StreamClosed(Exception):
    """The reader of our stdout went away (SSH channel closed, pipe broken)."""


def finite(value: Optional[float], digits: int = 1) -> Optional[float]:
    """Round a float for the wire; NaN and infinities become null (JSON has neither)."""
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits)


class Writer:
    """Writes protocol messages to a binary stream, one line each, thread-safe.

    The sampling loop and the NVML event thread both write, so a lock keeps their
    lines whole.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.closed = False
        self.bytes_written = 0

    def send(self, message: Message) -> None:
        """Encode and write one message, flushing it so the controller sees it now.

        Raises:
            StreamClosed: the other end of stdout is gone.
        """
        line = (_encoder.encode(message) + "\n").encode("utf-8")
        with self._lock:
            if self.closed:
                raise StreamClosed("stdout already closed")
            try:
                self._stream.write(line)
                self._stream.flush()
            except (BrokenPipeError, ConnectionResetError, ValueError) as exc:
                # ValueError: write to a closed file object.
                self.closed = True
                raise StreamClosed(str(exc)) from None
            self.bytes_written += len(line)


def _base(kind: str, t: float) -> Message:
    return {"v": PROTOCOL_VERSION, "type": kind, "t": round(t, 3)}


def hello(t: float, **fields: Any) -> Message:
    """The first message: agent, host, GPUs, ports and the field orders (see ``Hello``)."""
    message = _base("hello", t)
    message.update(fields)
    return message


def sample(
    t: float,
    seq: int,
    gpus: List[Optional[List[Any]]],
    ports: List[List[Any]],
    nics: List[List[Any]],
    lost: List[int],
    errs: Dict[str, Dict[str, str]],
    slow: Optional[Dict[str, Any]] = None,
) -> Message:
    """One tick; empty ``lost``/``errs`` and the slow-only keys are left out to save bytes."""
    message = _base("sample", t)
    message["seq"] = seq
    message["gpus"] = gpus
    message["ports"] = ports
    message["nics"] = nics
    if lost:
        message["lost"] = lost
    if errs:
        message["errs"] = errs
    if slow:
        message.update(slow)
    return message


def event(
    t: float,
    kind: str,
    gpu: Optional[int] = None,
    uuid: Optional[str] = None,
    code: Optional[int] = None,
    detail: str = "",
) -> Message:
    """An XID, ECC, recovery-action or gpu_lost event (see ``Event``)."""
    message = _base("event", t)
    message["kind"] = kind
    message["gpu"] = gpu
    message["uuid"] = uuid
    message["code"] = code
    if detail:
        message["detail"] = detail
    return message


def error(
    t: float, code: str, message: str = "", gpu: Optional[int] = None, fatal: bool = False
) -> Message:
    """A problem the agent survived, or with ``fatal`` did not (see ``Error``)."""
    out = _base("error", t)
    out["code"] = code
    out["message"] = message
    out["gpu"] = gpu
    out["fatal"] = fatal
    return out


def bye(t: float, reason: str) -> Message:
    """The agent is exiting on purpose."""
    out = _base("bye", t)
    out["reason"] = reason
    return out


def processes(t: float, body: Dict[str, Any]) -> Message:
    """The answer of ``gpufleet-agent processes`` (one line; see ``agent/processes.py``)."""
    out = _base("processes", t)
    out.update(body)
    return out
