"""Fake NVML calls: init, system queries, device identity and the 1 Hz readings."""

from __future__ import annotations

from typing import Any

from collectors.sim.cbase import (
    ERROR_INVALID_ARGUMENT,
    ERROR_NOT_FOUND,
    ERROR_NOT_SUPPORTED,
    ERROR_UNINITIALIZED,
    SUCCESS,
    LibraryBase,
    out,
    put_string,
    set_pointer,
    value,
)
from collectors.sim.identity import MODEL, PCI_DEVICE_ID, PCI_SUBSYSTEM_ID
from collectors.sim.workload import MEMORY_RESERVED, MEMORY_TOTAL, POWER_LIMIT_MW

DRIVER_VERSION = "570.124.06"
NVML_VERSION = "12.570.124.06"
CUDA_VERSION = 12080
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM, CLOCK_VIDEO = 0, 1, 2, 3
TEMPERATURE_GPU = 0


class BasicCalls(LibraryBase):
    """Init, system and per-device basic queries."""

    def _c_nvmlInitWithFlags(self, flags: Any) -> int:
        with self._lock:
            if self._init_count == 0:
                # Enumeration happens at init, as in the driver: a GPU missing now stays
                # missing until the agent re-initialises (a reboot, in the scenario).
                self._visible = self._model.visible(self.now())
            self._init_count += 1
        return SUCCESS

    def _c_nvmlInit_v2(self) -> int:
        return self._c_nvmlInitWithFlags(0)

    def _c_nvmlShutdown(self) -> int:
        with self._lock:
            if self._init_count == 0:
                return ERROR_UNINITIALIZED
            self._init_count -= 1
        return SUCCESS

    def _c_nvmlSystemGetDriverVersion(self, buffer: Any, length: Any) -> int:
        return put_string(buffer, length, DRIVER_VERSION)

    def _c_nvmlSystemGetNVMLVersion(self, buffer: Any, length: Any) -> int:
        return put_string(buffer, length, NVML_VERSION)

    def _c_nvmlSystemGetCudaDriverVersion(self, ref: Any) -> int:
        out(ref).value = CUDA_VERSION
        return SUCCESS

    def _c_nvmlSystemGetCudaDriverVersion_v2(self, ref: Any) -> int:
        return self._c_nvmlSystemGetCudaDriverVersion(ref)

    def _c_nvmlSystemGetProcessName(self, pid: Any, buffer: Any, length: Any) -> int:
        return put_string(buffer, length, "python3")

    def _c_nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        if self._init_count == 0:
            return ERROR_UNINITIALIZED
        out(ref).value = len(self._visible)
        return SUCCESS

    def _c_nvmlDeviceGetHandleByIndex_v2(self, index: Any, ref: Any) -> int:
        if self._init_count == 0:
            return ERROR_UNINITIALIZED
        i = value(index)
        if not 0 <= i < len(self._visible):
            return ERROR_INVALID_ARGUMENT
        # A lost GPU still yields its handle; every call on it then says GpuIsLost.
        set_pointer(out(ref), self.handle_for(self._visible[i]))
        return SUCCESS

    def _c_nvmlDeviceGetHandleByUUID(self, uuid: Any, ref: Any) -> int:
        if self._init_count == 0:
            return ERROR_UNINITIALIZED
        wanted = (uuid.value or b"").decode()
        for gpu in self._visible:
            if self._model.view(gpu, self.now()).identity.uuid == wanted:
                set_pointer(out(ref), self.handle_for(gpu))
                return SUCCESS
        return ERROR_NOT_FOUND

    def _c_nvmlDeviceGetIndex(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = self._visible.index(view.index)
        return SUCCESS

    def _c_nvmlDeviceGetUUID(self, handle: Any, buffer: Any, length: Any) -> int:
        ret, view = self.device(handle)
        return ret if view is None or ret else put_string(buffer, length, view.identity.uuid)

    def _c_nvmlDeviceGetName(self, handle: Any, buffer: Any, length: Any) -> int:
        ret, view = self.device(handle)
        return ret if view is None or ret else put_string(buffer, length, MODEL)

    def _c_nvmlDeviceGetSerial(self, handle: Any, buffer: Any, length: Any) -> int:
        ret, view = self.device(handle)
        return ret if view is None or ret else put_string(buffer, length, view.identity.serial)

    def _c_nvmlDeviceGetPciInfo_v3(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        info = out(ref)
        info.busIdLegacy = view.identity.bus_id_legacy.encode()
        info.busId = view.identity.bus_id.encode()
        info.domain, info.bus, info.device = 0, view.identity.bus, 0
        info.pciDeviceId, info.pciSubSystemId = PCI_DEVICE_ID, PCI_SUBSYSTEM_ID
        return SUCCESS

    def _c_nvmlDeviceGetUtilizationRates(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).gpu, out(ref).memory = view.reading.util_gpu, view.reading.util_mem
        return SUCCESS

    def _c_nvmlDeviceGetMemoryInfo(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        memory = out(ref)
        # v1 folds the reserved memory into "used", as drivers >= 510 do.
        memory.total = MEMORY_TOTAL
        memory.used = view.reading.memory_used + MEMORY_RESERVED
        memory.free = MEMORY_TOTAL - memory.used
        return SUCCESS

    def _c_nvmlDeviceGetMemoryInfo_v2(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        memory = out(ref)
        memory.total, memory.reserved = MEMORY_TOTAL, MEMORY_RESERVED
        memory.used = view.reading.memory_used
        memory.free = MEMORY_TOTAL - MEMORY_RESERVED - memory.used
        return SUCCESS

    def _c_nvmlDeviceGetPowerUsage(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = view.reading.power_mw
        return SUCCESS

    def _c_nvmlDeviceGetEnforcedPowerLimit(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        cap = view.faults.power_cap_w
        out(ref).value = POWER_LIMIT_MW if cap is None else cap * 1000
        return SUCCESS

    def _c_nvmlDeviceGetPowerManagementLimit(self, handle: Any, ref: Any) -> int:
        return self._c_nvmlDeviceGetEnforcedPowerLimit(handle, ref)

    def _c_nvmlDeviceGetTemperature(self, handle: Any, sensor: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        if value(sensor) != TEMPERATURE_GPU:
            return ERROR_INVALID_ARGUMENT
        out(ref).value = view.reading.temp_c
        return SUCCESS

    def _c_nvmlDeviceGetTemperatureV(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        temperature = out(ref)
        if value(temperature.sensorType) != TEMPERATURE_GPU:
            return ERROR_INVALID_ARGUMENT
        temperature.temperature = view.reading.temp_c
        return SUCCESS

    def _c_nvmlDeviceGetTemperatureThreshold(self, handle: Any, kind: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        # shutdown, slowdown, memory max, GPU max operating: an H100 SXM's figures
        thresholds = {0: 92, 1: 89, 2: 95, 3: 87}
        if value(kind) not in thresholds:
            return ERROR_NOT_SUPPORTED
        out(ref).value = thresholds[value(kind)]
        return SUCCESS

    def _c_nvmlDeviceGetClockInfo(self, handle: Any, clock: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        kind = value(clock)
        clocks = {
            CLOCK_GRAPHICS: view.reading.sm_clock,
            CLOCK_SM: view.reading.sm_clock,
            CLOCK_MEM: view.reading.mem_clock,
            CLOCK_VIDEO: 1755 if view.reading.util_gpu else 765,
        }
        if kind not in clocks:
            return ERROR_INVALID_ARGUMENT
        out(ref).value = clocks[kind]
        return SUCCESS

    def _c_nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        maxima = {CLOCK_GRAPHICS: 1980, CLOCK_SM: 1980, CLOCK_MEM: 2619, CLOCK_VIDEO: 1545}
        if value(clock) not in maxima:
            return ERROR_INVALID_ARGUMENT
        out(ref).value = maxima[value(clock)]
        return SUCCESS

    def _c_nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = view.reading.reasons
        return SUCCESS

    def _c_nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: Any, ref: Any) -> int:
        return self._c_nvmlDeviceGetCurrentClocksEventReasons(handle, ref)

    def _c_nvmlDeviceGetPerformanceState(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = view.reading.pstate
        return SUCCESS

    def _c_nvmlDeviceGetPowerState(self, handle: Any, ref: Any) -> int:
        return self._c_nvmlDeviceGetPerformanceState(handle, ref)

    def _c_nvmlDeviceGetPersistenceMode(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = 1
        return SUCCESS

    def _c_nvmlDeviceGetMigMode(self, handle: Any, current: Any, pending: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(current).value, out(pending).value = 0, 0  # MIG disabled
        return SUCCESS
