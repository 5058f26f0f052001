"""The 1 Hz path: GPU_FIELDS for one GPU, one NVML call per group of fields.

No process listing and no sleeping: GPM utilisation compares this tick's GPM
sample with the one kept from the previous tick.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any, Callable, List, Optional, Tuple

import pynvml

from collectors.agent.wire import finite

Reader = Callable[[Any], Tuple[Any, ...]]
_MIB = 1 << 20


def _utilization(handle: Any) -> Tuple[Any, ...]:
    rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
    return (rates.gpu, rates.memory)


def _memory_v2(handle: Any) -> Tuple[Any, ...]:
    # v2 accounts reserved memory separately; v1 misreports usage on drivers >= 510.
    return (pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2).used // _MIB,)


def _memory_v1(handle: Any) -> Tuple[Any, ...]:
    return (pynvml.nvmlDeviceGetMemoryInfo(handle).used // _MIB,)


def _power(handle: Any) -> Tuple[Any, ...]:
    return (finite(pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),)


def _temperature_v(handle: Any) -> Tuple[Any, ...]:
    return (pynvml.nvmlDeviceGetTemperatureV(handle, pynvml.NVML_TEMPERATURE_GPU),)


def _temperature_legacy(handle: Any) -> Tuple[Any, ...]:
    return (pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),)


def _sm_clock(handle: Any) -> Tuple[Any, ...]:
    return (pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),)


def _clock_events(handle: Any) -> Tuple[Any, ...]:
    return (pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle),)


def _clock_throttle_legacy(handle: Any) -> Tuple[Any, ...]:
    return (pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle),)


def _pstate(handle: Any) -> Tuple[Any, ...]:
    return (pynvml.nvmlDeviceGetPerformanceState(handle),)


class GpmPair:
    """GPM SM and tensor activity from two GPM samples, kept across ticks.

    NVML computes GPM metrics between two samples; taking both inside one tick would
    mean sleeping, so each tick takes one sample and compares it with the previous.
    The first call only takes the baseline sample and reports nulls.
    """

    _METRICS = (pynvml.NVML_GPM_METRIC_SM_UTIL, pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL)

    def __init__(self) -> None:
        self._previous: Any = None
        self._current: Any = None
        self._request: Any = None

    def _start(self, handle: Any) -> None:
        support = pynvml.nvmlGpmQueryDeviceSupport(handle)
        if not support.isSupportedDevice:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        previous = pynvml.nvmlGpmSampleAlloc()
        current = pynvml.nvmlGpmSampleAlloc()
        pynvml.nvmlGpmSampleGet(handle, previous)
        request = pynvml.c_nvmlGpmMetricsGet_t()
        request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(self._METRICS)
        self._previous, self._current, self._request = previous, current, request

    def read(self, handle: Any) -> Tuple[Any, ...]:
        """``(sm_active, tensor_active)`` in %, one decimal; per-metric errors as NVMLError."""
        if self._request is None:
            self._start(handle)
            return (None, None)
        pynvml.nvmlGpmSampleGet(handle, self._current)
        request = self._request
        request.sample1 = self._previous
        request.sample2 = self._current
        for slot, metric in enumerate(self._METRICS):
            request.metrics[slot].metricId = metric
        pynvml.nvmlGpmMetricsGet(request)
        self._previous, self._current = self._current, self._previous
        return tuple(_metric_value(request.metrics[slot]) for slot in range(len(self._METRICS)))

    def close(self) -> None:
        """Free the two GPM samples (best effort: the GPU may be gone)."""
        for sample in (self._previous, self._current):
            if sample is not None:
                with contextlib.suppress(pynvml.NVMLError):
                    pynvml.nvmlGpmSampleFree(sample)
        self._previous = self._current = self._request = None


def _metric_value(metric: Any) -> Any:
    if metric.nvmlReturn != pynvml.NVML_SUCCESS:
        return pynvml.NVMLError(metric.nvmlReturn)
    return finite(metric.value)


def fast_candidates(gpm: GpmPair) -> List[Tuple[Tuple[str, ...], List[Reader]]]:
    """Per group of GPU_FIELDS, the readers to try at start, preferred first."""
    return [
        (("util_gpu", "util_mem"), [_utilization]),
        (("sm_active", "tensor_active"), [gpm.read]),
        (("mem_used_mib",), [_memory_v2, _memory_v1]),
        (("power_w",), [_power]),
        (("temp_c",), [_temperature_v, _temperature_legacy]),
        (("sm_clock_mhz",), [_sm_clock]),
        (("clock_reasons",), [_clock_events, _clock_throttle_legacy]),
        (("pstate",), [_pstate]),
    ]


def handle_key(handle: Any) -> Optional[int]:
    """The opaque pointer value of a device handle (to match event data to a GPU)."""
    return ctypes.cast(handle, ctypes.c_void_p).value
