"""The fake ``libnvidia-ml``: one object answering NVML's C symbol names.

Attribute lookups such as ``lib.nvmlDeviceGetCount_v2`` resolve to callables that
take the same ctypes arguments as the C functions and return ``nvmlReturn_t`` codes;
unknown symbols raise ``AttributeError``, which ``pynvml`` turns into
``NVMLError_FunctionNotFound`` just as it does for an old driver.
"""

from __future__ import annotations

from collectors.sim.calls_basic import BasicCalls
from collectors.sim.calls_delivery import DeliveryCalls
from collectors.sim.calls_events import EventCalls
from collectors.sim.calls_reliability import ReliabilityCalls


class FakeNvmlLibrary(DeliveryCalls, EventCalls, ReliabilityCalls, BasicCalls):
    """All the fake calls of one simulated node."""
