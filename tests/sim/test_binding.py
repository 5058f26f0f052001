"""The real pynvml binding runs through the fake library and behaves as on a node."""

from __future__ import annotations

import ctypes
import re

import pynvml
import pytest

from collectors.sim import ManualClock


def _address(handle: object) -> int | None:
    return ctypes.cast(handle, ctypes.c_void_p).value


def test_calls_before_init_raise_pynvml_uninitialized(install_node) -> None:
    install_node()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetCount()


def test_unknown_symbol_is_function_not_found(nvml) -> None:
    nvml()
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlDeviceGetHandleBySerial("1654000000000")


def test_bad_index_is_invalid_argument(nvml) -> None:
    nvml()
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetHandleByIndex(8)


def test_system_queries_decode_strings(nvml) -> None:
    nvml()
    assert re.fullmatch(r"\d{3}\.\d+\.\d+", pynvml.nvmlSystemGetDriverVersion())
    assert pynvml.nvmlSystemGetCudaDriverVersion_v2() == 12080
    assert pynvml.nvmlSystemGetNVMLVersion().startswith("12.")


def test_identity_looks_like_an_h100_board(nvml) -> None:
    nvml()
    assert pynvml.nvmlDeviceGetCount() == 8
    uuids, buses = set(), []
    for i in range(8):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        assert isinstance(handle, pynvml.c_nvmlDevice_t)
        assert pynvml.nvmlDeviceGetIndex(handle) == i
        assert pynvml.nvmlDeviceGetName(handle) == "NVIDIA H100 80GB HBM3"
        uuid = pynvml.nvmlDeviceGetUUID(handle)
        assert re.fullmatch(
            r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", uuid
        )
        assert re.fullmatch(r"\d{13}", pynvml.nvmlDeviceGetSerial(handle))
        pci = pynvml.nvmlDeviceGetPciInfo(handle)
        assert isinstance(pci, pynvml.nvmlPciInfo_t)
        assert re.fullmatch(r"00000000:[0-9A-F]{2}:00\.0", pci.busId)
        assert pci.busIdLegacy == pci.busId[4:]
        assert pci.pciDeviceId == 0x233010DE
        by_uuid = pynvml.nvmlDeviceGetHandleByUUID(uuid.encode())
        assert _address(by_uuid) == _address(handle)
        uuids.add(uuid)
        buses.append(pci.busId)
    assert len(uuids) == 8
    assert buses[0] == "00000000:18:00.0" and buses == sorted(buses)


def test_struct_out_params_and_versioned_memory(nvml) -> None:
    nvml()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    v2 = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
    v1 = pynvml.nvmlDeviceGetMemoryInfo(handle)
    assert isinstance(v2, pynvml.c_nvmlMemory_v2_t) and isinstance(v1, pynvml.c_nvmlMemory_t)
    assert v2.total == v1.total == 81559 * 2**20
    assert v2.free + v2.used + v2.reserved == v2.total
    assert v1.used == v2.used + v2.reserved  # v1 folds reserved memory into "used"
    util = pynvml.nvmlDeviceGetUtilizationRates(handle)
    assert isinstance(util, pynvml.c_nvmlUtilization_t) and 0 <= util.gpu <= 100
    temp_v = pynvml.nvmlDeviceGetTemperatureV(handle, pynvml.NVML_TEMPERATURE_GPU)
    assert temp_v == pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)
    assert 20 <= temp_v <= 95
    assert pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) == 700_000
    assert 50_000 <= pynvml.nvmlDeviceGetPowerUsage(handle) <= 700_000
    assert pynvml.nvmlDeviceGetPerformanceState(handle) in range(16)
    reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
    assert reasons == pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)


def test_field_values_report_per_field_returns(nvml) -> None:
    nvml()
    handle = pynvml.nvmlDeviceGetHandleByIndex(2)
    ids = [
        pynvml.NVML_FI_DEV_ECC_DBE_VOL_TOTAL,
        pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT,
        (pynvml.NVML_FI_DEV_NVLINK_GET_STATE, 3),
        (pynvml.NVML_FI_DEV_NVLINK_GET_STATE, 40),  # no such link
        9999,  # no such field
        pynvml.NVML_FI_DEV_POWER_AVERAGE,
    ]
    values = pynvml.nvmlDeviceGetFieldValues(handle, ids)
    assert all(isinstance(v, pynvml.c_nvmlFieldValue_t) for v in values)
    returns = [v.nvmlReturn for v in values]
    assert returns == [
        0,
        0,
        0,
        pynvml.NVML_ERROR_INVALID_ARGUMENT,
        pynvml.NVML_ERROR_NOT_SUPPORTED,
        0,
    ]
    assert values[0].value.ullVal == 0
    assert values[1].valueType == pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
    assert values[1].value.uiVal == 18
    assert values[2].scopeId == 3 and values[2].value.uiVal == 1
    assert values[5].value.uiVal == pynvml.nvmlDeviceGetPowerUsage(handle)
    assert values[0].timestamp > 1_600_000_000_000_000  # microseconds since the epoch


def test_processes_use_the_two_call_protocol(nvml, clock: ManualClock) -> None:
    nvml(seed=1)
    seen_busy = False
    for second in range(0, 7200, 120):  # some GPU runs a job at some point
        clock.set(second)
        for i in range(8):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
            util = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
            if procs:
                seen_busy = True
                assert procs[0].pid > 0 and procs[0].usedGpuMemory == memory.used
            else:
                assert util == 0
    assert seen_busy


def test_gpm_metrics_fill_struct_with_per_metric_returns(nvml) -> None:
    nvml()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert pynvml.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice == 1
    first, second = pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()
    pynvml.nvmlGpmSampleGet(handle, first)
    pynvml.nvmlGpmSampleGet(handle, second)
    request = pynvml.c_nvmlGpmMetricsGet_t()
    request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = 3
    request.sample1, request.sample2 = first, second
    for i, metric in enumerate((pynvml.NVML_GPM_METRIC_SM_UTIL, 5, 470)):
        request.metrics[i].metricId = metric
    pynvml.nvmlGpmMetricsGet(request)
    assert [request.metrics[i].nvmlReturn for i in range(3)] == [0, 0, 3]
    util = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
    assert 0 <= request.metrics[0].value <= util
    pynvml.nvmlGpmSampleFree(first)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpmSampleFree(first)


def test_nvlink_and_reliability_calls_on_a_healthy_gpu(nvml) -> None:
    nvml()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    assert [pynvml.nvmlDeviceGetNvLinkState(handle, link) for link in range(18)] == [1] * 18
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetNvLinkState(handle, 18)
    assert (
        pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, 0, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT) == 0
    )
    assert pynvml.nvmlDeviceGetRemappedRows(handle) == (0, 0, 0, 0)
    assert pynvml.nvmlDeviceGetRetiredPages(handle, 1) == []
    assert pynvml.nvmlDeviceGetRetiredPages_v2(handle, 0) == []
    assert pynvml.nvmlDeviceGetRetiredPagesPendingStatus(handle) == 0
    total = pynvml.nvmlDeviceGetTotalEccErrors(handle, 1, pynvml.NVML_VOLATILE_ECC)
    dram = pynvml.nvmlDeviceGetMemoryErrorCounter(handle, 1, 0, pynvml.NVML_MEMORY_LOCATION_DRAM)
    assert total == dram == 0


def test_unknown_uuid_is_not_found(nvml) -> None:
    nvml()
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetHandleByUUID(b"GPU-00000000-0000-0000-0000-000000000000")


def test_shutdown_makes_calls_uninitialized_again(nvml) -> None:
    nvml()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    pynvml.nvmlInit()  # refcounted: two inits need two shutdowns
    pynvml.nvmlShutdown()
    assert pynvml.nvmlDeviceGetIndex(handle) == 0
    pynvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetIndex(handle)
    pynvml.nvmlInit()  # the fixture shuts down once more
