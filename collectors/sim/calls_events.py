"""Fake NVML calls: event sets, GPM metrics and the running-process list.

``nvmlEventSetWait_v2`` blocks on a ``threading.Condition`` for up to its timeout;
the node's ticker (and :meth:`EventCalls.notify_events`) wakes waiters whenever
simulated time moves, and a waiter that finds nothing due returns Timeout, as the
real call does.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from collectors.sim.calls_delivery import CHECK_PID, RESIDENT_PID, provider_pids
from collectors.sim.cbase import (
    ERROR_INSUFFICIENT_SIZE,
    ERROR_INVALID_ARGUMENT,
    ERROR_NOT_SUPPORTED,
    ERROR_TIMEOUT,
    ERROR_UNINITIALIZED,
    SUCCESS,
    LibraryBase,
    address_of,
    out,
    set_pointer,
    value,
)
from collectors.sim.effects import SimEvent
from collectors.sim.model import CHECK_MEMORY, GpuView

# SBE, DBE, PState, XID, Clock, SBE storm, DRAM retirement event/failure, (non)fatal
# poison, GPU unavailable, recovery action: what an H100 on a recent driver reports.
SUPPORTED_EVENTS = 0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x200 | 0x400 | 0x800 | 0x1000 | 0x2000
SUPPORTED_EVENTS |= 0x4000 | 0x8000
ERROR_ARGUMENT_VERSION_MISMATCH = 25
GPM_METRICS_VERSION = 1
NO_INSTANCE = 0xFFFFFFFF
_ADDRESSES = itertools.count(0x6E70_0000_0010, 0x10)


@dataclass
class EventSet:
    """One ``nvmlEventSet_t``: which GPUs registered which types, and from when."""

    registered: dict[int, tuple[int, float]] = field(default_factory=dict)
    delivered: set[int] = field(default_factory=set)

    def next_due(self, events: tuple[SimEvent, ...], t: float) -> SimEvent | None:
        """The first undelivered event due by ``t`` on a registered GPU; marks it delivered."""
        for position, event in enumerate(events):
            if event.at > t:
                return None
            mask, since = self.registered.get(event.gpu, (0, float("inf")))
            # Events that happened before registration are not recorded, as in NVML.
            if position in self.delivered or not mask & event.event_type or event.at < since:
                continue
            self.delivered.add(position)
            return event
        return None


class EventCalls(LibraryBase):
    """Event sets, GPM and processes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._event_sets: dict[int, EventSet] = {}
        self._events_moved = threading.Condition()
        self._gpm_samples: dict[int, tuple[int, float] | None] = {}

    def notify_events(self) -> None:
        """Wake every event waiter: simulated time has moved."""
        with self._events_moved:
            self._events_moved.notify_all()

    def _c_nvmlEventSetCreate(self, ref: Any) -> int:
        if self._init_count == 0:
            return ERROR_UNINITIALIZED
        address = next(_ADDRESSES)
        with self._events_moved:
            self._event_sets[address] = EventSet()
        set_pointer(out(ref), address)
        return SUCCESS

    def _c_nvmlEventSetFree(self, event_set: Any) -> int:
        with self._events_moved:
            found = self._event_sets.pop(address_of(event_set) or 0, None)
        return SUCCESS if found is not None else ERROR_INVALID_ARGUMENT

    def _c_nvmlDeviceGetSupportedEventTypes(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = SUPPORTED_EVENTS
        return SUCCESS

    def _c_nvmlDeviceRegisterEvents(self, handle: Any, mask: Any, event_set: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        if value(mask) & ~SUPPORTED_EVENTS:
            return ERROR_NOT_SUPPORTED
        with self._events_moved:
            target = self._event_sets.get(address_of(event_set) or 0)
            if target is None:
                return ERROR_INVALID_ARGUMENT
            old_mask, since = target.registered.get(view.index, (0, self.now()))
            target.registered[view.index] = (old_mask | value(mask), since)
        return SUCCESS

    def _c_nvmlEventSetWait_v2(self, event_set: Any, ref: Any, timeout_ms: Any) -> int:
        deadline = time.monotonic() + value(timeout_ms) / 1000
        with self._events_moved:
            target = self._event_sets.get(address_of(event_set) or 0)
            if target is None:
                return ERROR_INVALID_ARGUMENT
            while True:
                event = target.next_due(self._model.faults.events, self.now())
                if event is not None:
                    self._fill_event(out(ref), event)
                    return SUCCESS
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return ERROR_TIMEOUT
                self._events_moved.wait(remaining)

    def _fill_event(self, data: Any, event: SimEvent) -> None:
        offset = type(data).device.offset
        ctypes.c_void_p.from_buffer(data, offset).value = self.handle_for(event.gpu)
        data.eventType, data.eventData = event.event_type, event.data
        data.gpuInstanceId = data.computeInstanceId = NO_INSTANCE

    def _c_nvmlGpmQueryDeviceSupport(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).isSupportedDevice = 1
        return SUCCESS

    def _c_nvmlGpmSampleAlloc(self, ref: Any) -> int:
        address = next(_ADDRESSES)
        with self._lock:
            self._gpm_samples[address] = None
        set_pointer(out(ref), address)
        return SUCCESS

    def _c_nvmlGpmSampleFree(self, sample: Any) -> int:
        with self._lock:
            found = self._gpm_samples.pop(address_of(sample) or 0, 0)
        return SUCCESS if found != 0 else ERROR_INVALID_ARGUMENT

    def _c_nvmlGpmSampleGet(self, handle: Any, sample: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        with self._lock:
            address = address_of(sample) or 0
            if address not in self._gpm_samples:
                return ERROR_INVALID_ARGUMENT
            self._gpm_samples[address] = (view.index, self.now())
        return SUCCESS

    def _c_nvmlGpmMetricsGet(self, ref: Any) -> int:
        request = out(ref)
        if request.version != GPM_METRICS_VERSION:
            return ERROR_ARGUMENT_VERSION_MISMATCH
        with self._lock:
            first = self._gpm_samples.get(address_of(request.sample1) or 0)
            second = self._gpm_samples.get(address_of(request.sample2) or 0)
        if first is None or second is None or first[0] != second[0]:
            return ERROR_INVALID_ARGUMENT
        ret, view = self.device(self.handle_for(second[0]))
        if view is None or ret:
            return ret
        view = self._model.view(second[0], second[1])  # the interval ends at sample 2
        for i in range(request.numMetrics):
            metric = request.metrics[i]
            number = _gpm_metric(view, metric.metricId)
            metric.nvmlReturn = SUCCESS if number is not None else ERROR_NOT_SUPPORTED
            metric.value = number or 0.0
        return SUCCESS

    def _c_nvmlDeviceGetComputeRunningProcesses_v3(
        self, handle: Any, count: Any, procs: Any
    ) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        running = running_processes(view)
        capacity, out(count).value = out(count).value, len(running)
        if not running:
            return SUCCESS
        if procs is None or capacity < len(running):
            return ERROR_INSUFFICIENT_SIZE
        for i, (pid, used) in enumerate(running):
            procs[i].pid, procs[i].usedGpuMemory = pid, used
            procs[i].gpuInstanceId = procs[i].computeInstanceId = NO_INSTANCE
        return SUCCESS

    def _c_nvmlDeviceGetGraphicsRunningProcesses_v3(
        self, handle: Any, count: Any, procs: Any
    ) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(count).value = 0
        return SUCCESS


def _gpm_metric(view: GpuView, metric_id: int) -> float | None:
    r = view.reading
    metrics = {
        1: float(r.util_gpu),  # GRAPHICS_UTIL
        2: r.sm_active,  # SM_UTIL
        3: round(r.sm_active * 0.6, 1),  # SM_OCCUPANCY
        4: round(r.sm_active * 0.3, 1),  # INTEGER_UTIL
        5: r.tensor_active,  # ANY_TENSOR_UTIL
        6: 0.0,  # DFMA tensor
        7: r.tensor_active,  # HMMA tensor: training is bf16/fp16
        9: 0.0,  # IMMA tensor
        10: min(100.0, r.util_mem * 1.3),  # DRAM_BW_UTIL
        11: 0.0,  # FP64
        12: round(r.sm_active * 0.2, 1),  # FP32
        13: round(r.sm_active * 0.1, 1),  # FP16
        20: r.util_gpu * 12.0,  # PCIe TX MiB/s
        21: r.util_gpu * 30.0,  # PCIe RX MiB/s
        60: r.util_gpu * 2500.0,  # NVLink total RX MiB/s
        61: r.util_gpu * 2500.0,  # NVLink total TX MiB/s
    }
    return metrics.get(metric_id)


def running_processes(view: GpuView) -> list[tuple[int, int]]:
    """(pid, bytes used) of the jobs and the provider's processes on the GPU now."""
    provider = {RESIDENT_PID: view.faults.reserved_bytes, CHECK_PID: CHECK_MEMORY}
    pids = provider_pids(view)
    job_bytes = view.reading.memory_used - sum(provider[p] for p in pids)
    running = [] if view.reading.pid is None else [(view.reading.pid, max(0, job_bytes))]
    running += [(pid, max(0, job_bytes)) for pid in view.faults.job_pids]  # scheduler jobs
    return running + [(p, provider[p]) for p in pids]
