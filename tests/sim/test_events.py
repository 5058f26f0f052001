"""NVML event sets: XIDs arrive when simulated time reaches them; waits time out."""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time

import pynvml
import pytest

from collectors.sim import ManualClock

SCENARIO = """
[[fault]]
kind = "xid79"
node = "node-001"
gpu = 6
at = 30

[[fault]]
kind = "ecc_dbe"
node = "node-001"
gpu = 1
at = "40s"
xid = 95
"""


def _register_all(mask: int) -> object:
    event_set = pynvml.nvmlEventSetCreate()
    for i in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        with contextlib.suppress(pynvml.NVMLError_GpuIsLost):  # a lost GPU cannot register
            supported = pynvml.nvmlDeviceGetSupportedEventTypes(handle)
            pynvml.nvmlDeviceRegisterEvents(handle, mask & supported, event_set)
    return event_set


def test_wait_blocks_for_its_timeout_then_raises_timeout(nvml) -> None:
    nvml(scenario=SCENARIO)
    event_set = _register_all(pynvml.nvmlEventTypeXidCriticalError)
    started = time.monotonic()
    with pytest.raises(pynvml.NVMLError_Timeout):
        pynvml.nvmlEventSetWait_v2(event_set, 200)
    assert time.monotonic() - started >= 0.19
    pynvml.nvmlEventSetFree(event_set)


def test_due_events_arrive_in_time_order_with_device_and_data(nvml, clock: ManualClock) -> None:
    nvml(scenario=SCENARIO)
    mask = pynvml.nvmlEventTypeXidCriticalError | pynvml.nvmlEventTypeDoubleBitEccError
    event_set = _register_all(mask)
    clock.set(45)
    got = []
    for _ in range(3):
        data = pynvml.nvmlEventSetWait_v2(event_set, 0)
        got.append((data.eventType, data.eventData, _index_of(data.device)))
    assert got == [
        (pynvml.nvmlEventTypeXidCriticalError, 79, 6),
        (pynvml.nvmlEventTypeDoubleBitEccError, 0, 1),
        (pynvml.nvmlEventTypeXidCriticalError, 95, 1),
    ]
    with pytest.raises(pynvml.NVMLError_Timeout):
        pynvml.nvmlEventSetWait_v2(event_set, 0)


def _index_of(device: object) -> int:
    for i in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        if ctypes.cast(handle, ctypes.c_void_p).value == ctypes.cast(device, ctypes.c_void_p).value:
            return i
    raise AssertionError("event names no known device")


def test_a_blocked_waiter_wakes_when_time_moves(nvml, clock: ManualClock) -> None:
    node = nvml(scenario=SCENARIO)
    event_set = _register_all(pynvml.nvmlEventTypeXidCriticalError)
    received: list[int] = []
    waiting = threading.Event()

    def waiter() -> None:
        waiting.set()
        received.append(pynvml.nvmlEventSetWait_v2(event_set, 10_000).eventData)

    thread = threading.Thread(target=waiter)
    thread.start()
    assert waiting.wait(5)
    clock.set(31)
    node.tick()
    thread.join(timeout=5)
    assert not thread.is_alive() and received == [79]


def test_events_before_registration_and_outside_mask_are_not_recorded(
    nvml, clock: ManualClock
) -> None:
    nvml(scenario=SCENARIO)
    clock.set(35)  # the XID 79 happened before anyone listened
    event_set = _register_all(pynvml.nvmlEventTypeDoubleBitEccError)
    clock.set(50)
    data = pynvml.nvmlEventSetWait_v2(event_set, 0)
    assert data.eventType == pynvml.nvmlEventTypeDoubleBitEccError
    with pytest.raises(pynvml.NVMLError_Timeout):
        pynvml.nvmlEventSetWait_v2(event_set, 0)  # XID 95 is outside the mask


def test_each_event_set_sees_every_event(nvml, clock: ManualClock) -> None:
    nvml(scenario=SCENARIO)
    first = _register_all(pynvml.nvmlEventTypeXidCriticalError)
    second = _register_all(pynvml.nvmlEventTypeXidCriticalError)
    clock.set(31)
    assert pynvml.nvmlEventSetWait_v2(first, 0).eventData == 79
    assert pynvml.nvmlEventSetWait_v2(second, 0).eventData == 79


def test_freed_set_is_invalid(nvml) -> None:
    nvml()
    event_set = pynvml.nvmlEventSetCreate()
    pynvml.nvmlEventSetFree(event_set)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlEventSetWait_v2(event_set, 0)
