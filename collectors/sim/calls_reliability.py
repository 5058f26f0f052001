"""Fake NVML calls: ECC, retired pages, row remapping, NVLink and field values."""

from __future__ import annotations

from typing import Any

from collectors.sim.cbase import (
    ERROR_GPU_IS_LOST,
    ERROR_INVALID_ARGUMENT,
    SUCCESS,
    LibraryBase,
    out,
    value,
)
from collectors.sim.fields import TYPE_DOUBLE, field_value
from collectors.sim.params import NVLINKS

UNCORRECTED = 1
VOLATILE, AGGREGATE = 0, 1
LOCATION_DRAM = 2
NVLINK_COUNTERS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data"}
FABRIC_STATE_COMPLETED = 3  # the fabric manager registered the GPU
FABRIC_HEALTHY = 1


class ReliabilityCalls(LibraryBase):
    """Slow-cadence reliability queries and the batched field-value read."""

    def _c_nvmlDeviceGetGpuFabricInfoV(self, handle: Any, ref: Any) -> int:
        """An HGX board's GPU on a healthy NVSwitch fabric (Hopper and newer answer)."""
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        info = out(ref)
        info.status, info.cliqueId = SUCCESS, 0
        info.state, info.healthMask = FABRIC_STATE_COMPLETED, 0
        if any(name == "healthSummary" for name, *_ in type(info)._fields_):  # v3 and later
            info.healthSummary = FABRIC_HEALTHY
        return SUCCESS

    def _c_nvmlDeviceGetEccMode(self, handle: Any, current: Any, pending: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(current).value, out(pending).value = 1, 1
        return SUCCESS

    def _c_nvmlDeviceGetTotalEccErrors(
        self, handle: Any, error_type: Any, counter_type: Any, ref: Any
    ) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        if value(error_type) not in (0, 1) or value(counter_type) not in (VOLATILE, AGGREGATE):
            return ERROR_INVALID_ARGUMENT
        count = 0
        if value(error_type) == UNCORRECTED:
            faults = view.faults
            count = faults.ecc_unc_vol if value(counter_type) == VOLATILE else faults.ecc_unc_agg
        out(ref).value = count
        return SUCCESS

    def _c_nvmlDeviceGetMemoryErrorCounter(
        self, handle: Any, error_type: Any, counter_type: Any, location: Any, ref: Any
    ) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        if not 0 <= value(location) <= 7:
            return ERROR_INVALID_ARGUMENT
        if value(location) != LOCATION_DRAM:
            out(ref).value = 0
            return SUCCESS
        return self._c_nvmlDeviceGetTotalEccErrors(handle, error_type, counter_type, ref)

    def _c_nvmlDeviceGetRetiredPages(self, handle: Any, cause: Any, count: Any, pages: Any) -> int:
        # Hopper remaps rows instead of retiring pages: the list is always empty.
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(count).value = 0
        return SUCCESS

    def _c_nvmlDeviceGetRetiredPages_v2(
        self, handle: Any, cause: Any, count: Any, pages: Any, *times: Any
    ) -> int:
        return self._c_nvmlDeviceGetRetiredPages(handle, cause, count, pages)

    def _c_nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = 0
        return SUCCESS

    def _c_nvmlDeviceGetRemappedRows(
        self, handle: Any, corr: Any, unc: Any, pending: Any, failure: Any
    ) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        faults = view.faults
        out(corr).value, out(unc).value = faults.remap_corr, faults.remap_unc
        out(pending).value, out(failure).value = faults.remap_pending, faults.remap_failure
        return SUCCESS

    def _c_nvmlDeviceGetPcieReplayCounter(self, handle: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        out(ref).value = 0
        return SUCCESS

    def _c_nvmlDeviceGetNvLinkState(self, handle: Any, link: Any, ref: Any) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        if not 0 <= value(link) < NVLINKS:
            return ERROR_INVALID_ARGUMENT
        out(ref).value = int(view.faults.links_up[value(link)])
        return SUCCESS

    def _c_nvmlDeviceGetNvLinkErrorCounter(
        self, handle: Any, link: Any, counter: Any, ref: Any
    ) -> int:
        ret, view = self.device(handle)
        if view is None or ret:
            return ret
        if not 0 <= value(link) < NVLINKS:
            return ERROR_INVALID_ARGUMENT
        name = NVLINK_COUNTERS.get(value(counter))
        if name is None:  # DL_ECC_DATA and beyond: none counted here
            out(ref).value = 0
            return SUCCESS
        out(ref).value = getattr(view.faults, name)[value(link)]
        return SUCCESS

    def _c_nvmlDeviceGetFieldValues(self, handle: Any, count: Any, ref: Any) -> int:
        ret, view = self.device(handle, allow_lost=True)
        if view is None:
            return ret
        values = out(ref)
        stamp = self.wall_us(self.now())
        for i in range(value(count)):
            entry = values[i]
            entry.timestamp, entry.latencyUsec = stamp, 1
            if view.faults.lost:
                # Per-field results: the call itself succeeds, each field says GpuIsLost.
                entry.nvmlReturn, entry.valueType = ERROR_GPU_IS_LOST, TYPE_DOUBLE
                continue
            code, value_type, number = field_value(view, entry.fieldId, entry.scopeId)
            entry.nvmlReturn, entry.valueType = code, value_type
            if value_type == TYPE_DOUBLE:
                entry.value.dVal = float(number)
            else:
                entry.value.ullVal = number
        return SUCCESS
