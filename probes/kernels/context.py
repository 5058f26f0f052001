"""What every kernel gets: devices, the emitter, the deadline and the progress counter."""

import contextlib
import subprocess
import time
from typing import Any, List, Optional, Protocol

from .devices import ProbeDevice
from .emit import Emitter


class ProbeTimeout(Exception):
    """The suite's time limit was reached before a probe could measure anything."""


class Deadline:
    """A point in monotonic time after which no new measurement starts."""

    def __init__(self, seconds: float, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self.at = clock() + seconds

    def remaining(self) -> float:
        """Seconds left (negative once expired)."""
        return float(self.at - self._clock())

    def expired(self) -> bool:
        """True once the deadline has passed."""
        return self.remaining() <= 0


class Worker(Protocol):
    """A started worker process: ``subprocess.Popen`` or a forked rank."""

    def poll(self) -> Optional[int]: ...

    def kill(self) -> None: ...

    def wait(self, timeout: Optional[float] = None) -> int: ...


class Children:
    """Worker processes a probe started (NCCL ranks), so that every exit path ends them."""

    def __init__(self) -> None:
        self.processes: List[Worker] = []

    def add(self, process: Worker) -> None:
        """Remember a started worker."""
        self.processes.append(process)

    def kill_all(self) -> None:
        """Kill every worker still running and reap it."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            # A rank stuck in D state stays; the controller kills the whole group as well.
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)


class ProbeContext:
    """Shared state of one suite run on one node."""

    def __init__(
        self,
        torch: Any,
        devices: List[ProbeDevice],
        emitter: Emitter,
        deadline: Deadline,
        steps: int = 0,
        entry: Optional[List[str]] = None,
    ) -> None:
        self.torch = torch
        self.devices = devices
        self.emit = emitter
        self.deadline = deadline
        self.steps = steps
        self.step = 0
        self.children = Children()
        # How to start this program again (NCCL ranks): [python, probes.pyz] or [python, -m, pkg].
        self.entry = entry or []

    @property
    def on_gpu(self) -> bool:
        """True when the devices are real GPUs."""
        return bool(self.devices) and self.devices[0].is_cuda

    def advance(self, probe: str, gpu: int, message: str = "") -> None:
        """Count one planned measurement as done and tell the controller."""
        self.step = min(self.step + 1, self.steps) if self.steps else self.step + 1
        self.emit.progress(probe, gpu, self.step, self.steps, message)
