"""NVML events (XIDs, ECC, recovery actions) from an event set, as ``event`` messages.

The set is waited on in a thread so an XID arrives within a wait, not a tick. The
set is not thread-safe: only the watcher touches it after registration.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import pynvml

from collectors.agent import wire
from collectors.agent.fast import handle_key
from collectors.agent.gpus import Gpu
from collectors.agent.nvmlcall import error_name

# Event type bit -> event kind. Single-bit ECC and pstate/clock changes are left
# out: they can come many times a second and the slow counters already carry them.
EVENT_KINDS = {
    pynvml.nvmlEventTypeXidCriticalError: "xid",
    pynvml.nvmlEventTypeDoubleBitEccError: "dbe",
    pynvml.nvmlEventTypeSingleBitEccErrorStorm: "sbe_storm",
    pynvml.nvmlEventTypeDramRetirementEvent: "dram_retirement",
    pynvml.nvmlEventTypeDramRetirementFailure: "dram_retirement_failure",
    pynvml.nvmlEventTypeNonFatalPoisonError: "nonfatal_poison",
    pynvml.nvmlEventTypeFatalPoisonError: "fatal_poison",
    pynvml.nvmlEventTypeGpuUnavailableError: "gpu_unavailable",
    pynvml.nvmlEventTypeGpuRecoveryAction: "recovery_action",
}
WANTED_MASK = sum(EVENT_KINDS)
WAIT_MS = 500
_CODED = ("xid", "recovery_action")  # kinds whose eventData is a code worth sending

Emit = Callable[[wire.Message], None]


class EventWatcher:
    """Registers the GPUs on one NVML event set and turns its events into messages."""

    def __init__(self, gpus: List[Gpu], emit: Emit, now: Callable[[], float]) -> None:
        self._emit = emit
        self._now = now
        self._by_key: Dict[Optional[int], Gpu] = {g.key: g for g in gpus if g.key is not None}
        self._event_set: Any = None
        self._reported: set = set()
        self.registered: List[int] = []
        self._open(gpus)

    def _open(self, gpus: List[Gpu]) -> None:
        try:
            self._event_set = pynvml.nvmlEventSetCreate()
        except pynvml.NVMLError as exc:
            self._report_once(exc, "cannot create an NVML event set; no XID events")
            return
        for gpu in gpus:
            if gpu.handle is None or gpu.lost:
                continue
            try:
                supported = pynvml.nvmlDeviceGetSupportedEventTypes(gpu.handle)
                mask = WANTED_MASK & supported
                if mask:
                    pynvml.nvmlDeviceRegisterEvents(gpu.handle, mask, self._event_set)
                    self.registered.append(gpu.index)
            except pynvml.NVMLError as exc:
                self._report_once(exc, "GPU %d: no NVML events" % gpu.index, gpu.index)

    def poll(self, timeout_ms: int) -> bool:
        """Wait up to ``timeout_ms`` for one event and emit it; False when none came."""
        try:
            data = pynvml.nvmlEventSetWait_v2(self._event_set, timeout_ms)
        except pynvml.NVMLError as exc:
            if exc.value not in (pynvml.NVML_ERROR_TIMEOUT, pynvml.NVML_ERROR_GPU_IS_LOST):
                # GpuIsLost from wait names no GPU: the sampler reports which one.
                self._report_once(exc, "waiting for NVML events failed")
            return False
        self._emit_event(data)
        return True

    def drain(self) -> int:
        """Emit every event already queued, without waiting (for inline use)."""
        count = 0
        while self.registered and self.poll(0):
            count += 1
        return count

    def _emit_event(self, data: Any) -> None:
        gpu = self._by_key.get(handle_key(data.device))
        kind = EVENT_KINDS.get(data.eventType, "event_0x%x" % data.eventType)
        code = int(data.eventData) if kind in _CODED else None
        self._emit(
            wire.event(
                self._now(),
                kind,
                gpu=gpu.index if gpu else None,
                uuid=gpu.uuid if gpu else None,
                code=code,
                detail="" if code is not None else "eventData=%d" % data.eventData,
            )
        )

    def _report_once(self, exc: BaseException, message: str, gpu: Optional[int] = None) -> None:
        name = error_name(exc)
        if (name, gpu) in self._reported:
            return
        self._reported.add((name, gpu))
        self._emit(wire.error(self._now(), name, message, gpu=gpu))

    def run(self, stop: threading.Event) -> None:
        """The watcher thread's body: wait in slices until ``stop`` is set."""
        while self.registered and not stop.is_set():
            started = time.monotonic()
            if self.poll(WAIT_MS):
                continue
            # A wait that returns at once (a lost GPU, a library that does not block)
            # must not spin: pace it to the wait slice.
            rest = WAIT_MS / 1000.0 - (time.monotonic() - started)
            if rest > 0.05:
                stop.wait(rest)

    def start(self, stop: threading.Event) -> Optional[threading.Thread]:
        """Run :meth:`run` in a daemon thread; None when no GPU could register."""
        if not self.registered:
            return None
        thread = threading.Thread(target=self.run, args=(stop,), name="nvml-events", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        """Free the event set (the thread must have stopped)."""
        if self._event_set is not None:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlEventSetFree(self._event_set)
            self._event_set = None
