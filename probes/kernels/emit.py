"""JSON lines on stdout: the only channel from the probe back to the controller."""

import contextlib
import json
import math
import os
import threading
from typing import Any


class Emitter:
    """Writes one JSON object per line to a file descriptor.

    Each line goes out in a single ``os.write`` so that lines from the NCCL worker
    processes, which share the descriptor, never interleave (writes below PIPE_BUF
    are atomic on a pipe).
    """

    def __init__(self, fd: int = 1) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, kind: str, **fields: Any) -> None:
        """Write ``{"type": kind, **fields}`` as one line."""
        message = dict(type=kind, **fields)
        data = (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()
        # OSError: the controller went away (channel closed); nothing left to tell it.
        with self._lock, contextlib.suppress(OSError):
            os.write(self._fd, data)

    def progress(self, probe: str, gpu: int, step: int, steps: int, message: str = "") -> None:
        """Report that ``step`` of ``steps`` planned measurements is done."""
        self.send("progress", probe=probe, gpu=gpu, step=step, steps=steps, message=message)

    def result(
        self, probe: str, metric: str, gpu: int, value: float, unit: str, **extra: Any
    ) -> None:
        """Report one figure for one GPU; a non-finite value is sent as null."""
        shown = value if math.isfinite(value) else None
        self.send("result", probe=probe, metric=metric, gpu=gpu, value=shown, unit=unit, **extra)

    def error(self, code: str, message: str, **extra: Any) -> None:
        """Report a failure; ``code`` is machine-readable, ``message`` is for the operator."""
        self.send("error", code=code, message=message, **extra)
