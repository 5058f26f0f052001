"""Each GPU fault kind shows its NVML effect from its start time, and recover clears it."""

from __future__ import annotations

import pynvml
import pytest

from collectors.sim import ManualClock


def _fields(handle: object, *ids: int | tuple[int, int]) -> list[tuple[int, int]]:
    return [(v.nvmlReturn, v.value.ullVal) for v in pynvml.nvmlDeviceGetFieldValues(handle, ids)]


def _h(i: int) -> object:
    return pynvml.nvmlDeviceGetHandleByIndex(i)


def test_xid79_loses_the_gpu_until_recover(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "xid79"
node = "node-001"
gpu = 3
at = 60
[[fault]]
kind = "recover"
node = "node-001"
at = "5m"
"""
    )
    clock.set(59.9)
    assert pynvml.nvmlDeviceGetUtilizationRates(_h(3)).gpu >= 0
    clock.set(60)
    for call in (
        lambda: pynvml.nvmlDeviceGetUUID(_h(3)),
        lambda: pynvml.nvmlDeviceGetMemoryInfo(_h(3), version=pynvml.nvmlMemory_v2),
        lambda: pynvml.nvmlDeviceGetTotalEccErrors(_h(3), 1, 0),
        lambda: pynvml.nvmlDeviceGetNvLinkState(_h(3), 0),
    ):
        with pytest.raises(pynvml.NVMLError_GpuIsLost):
            call()
    assert _fields(_h(3), 4, 230) == [(15, 0), (15, 0)]  # per-field GpuIsLost, call succeeds
    assert pynvml.nvmlDeviceGetPowerUsage(_h(2)) > 0  # the other GPUs keep answering
    clock.set(300)
    assert pynvml.nvmlDeviceGetName(_h(3)) == "NVIDIA H100 80GB HBM3"


def test_ecc_dbe_raises_uncorrected_counts_and_pending_remap(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "ecc_dbe"
node = "node-001"
gpu = 2
at = 10
count = 2
[[fault]]
kind = "recover"
node = "node-001"
gpu = 2
at = 100
"""
    )
    handle = _h(2)
    clock.set(9)
    assert pynvml.nvmlDeviceGetTotalEccErrors(handle, 1, pynvml.NVML_VOLATILE_ECC) == 0
    clock.set(10)
    assert pynvml.nvmlDeviceGetTotalEccErrors(handle, 1, pynvml.NVML_VOLATILE_ECC) == 2
    assert pynvml.nvmlDeviceGetTotalEccErrors(handle, 1, pynvml.NVML_AGGREGATE_ECC) == 2
    assert pynvml.nvmlDeviceGetMemoryErrorCounter(handle, 1, 0, 2) == 2
    assert pynvml.nvmlDeviceGetRemappedRows(handle) == (0, 0, 1, 0)
    assert _fields(handle, 4, 6, 144, 230) == [(0, 2), (0, 2), (0, 1), (0, 1)]
    assert pynvml.nvmlDeviceGetTotalEccErrors(_h(1), 1, pynvml.NVML_VOLATILE_ECC) == 0
    clock.set(100)  # the reset clears volatile counts and applies the remap
    assert pynvml.nvmlDeviceGetTotalEccErrors(handle, 1, pynvml.NVML_VOLATILE_ECC) == 0
    assert pynvml.nvmlDeviceGetTotalEccErrors(handle, 1, pynvml.NVML_AGGREGATE_ECC) == 2
    assert pynvml.nvmlDeviceGetRemappedRows(handle) == (0, 2, 0, 0)
    assert _fields(handle, 230) == [(0, 0)]


def test_row_remap_pending_and_failure(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "row_remap_pending"
node = "node-001"
gpu = 0
at = 5
until = 50
[[fault]]
kind = "row_remap_failure"
node = "node-001"
gpu = 1
at = 5
"""
    )
    clock.set(4)
    assert pynvml.nvmlDeviceGetRemappedRows(_h(0)) == (0, 0, 0, 0)
    clock.set(5)
    assert pynvml.nvmlDeviceGetRemappedRows(_h(0)) == (0, 0, 1, 0)
    assert pynvml.nvmlDeviceGetRemappedRows(_h(1)) == (0, 0, 0, 1)
    assert _fields(_h(1), 145) == [(0, 1)]
    clock.set(50)
    assert pynvml.nvmlDeviceGetRemappedRows(_h(0)) == (1, 0, 0, 0)  # committed at the reset
    assert pynvml.nvmlDeviceGetRemappedRows(_h(1)) == (0, 0, 0, 1)


def test_nvlink_crc_storm_rate_and_replays(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "nvlink_crc_storm"
node = "node-001"
gpu = 4
at = 100
until = 200
link = 7
rate = 150
replay_every = "20s"
"""
    )
    handle = _h(4)
    clock.set(100)
    start = pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, 7, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT)
    clock.set(110)
    flit = pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, 7, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT)
    assert (flit - start) / 10 >= 100
    assert pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, 6, 2) == 0
    assert _fields(handle, (163, 7), 38) == [(0, flit), (0, flit)]
    clock.set(250)  # over: the counters keep what they counted, and stop
    assert pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, 7, 2) == 150 * 100
    assert pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, 7, 0) == 5
    assert _fields(handle, 52, (161, 7)) == [(0, 5), (0, 5)]


def test_nvlink_down_disables_one_link(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "nvlink_down"
node = "node-001"
gpu = 0
at = 20
link = 11
"""
    )
    clock.set(20)
    states = [pynvml.nvmlDeviceGetNvLinkState(_h(0), link) for link in range(18)]
    assert states == [1] * 11 + [0] + [1] * 6
    assert _fields(_h(0), (165, 11), (165, 10)) == [(0, 0), (0, 1)]


def test_thermal_slowdown_sets_hw_reasons_heat_and_cut_clocks(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "thermal_slowdown"
node = "node-001"
at = 30
until = 60
temp = 95
clock_factor = 0.4
"""
    )
    clock.set(29)
    before = [pynvml.nvmlDeviceGetClockInfo(_h(i), pynvml.NVML_CLOCK_SM) for i in range(8)]
    assert all(not pynvml.nvmlDeviceGetCurrentClocksEventReasons(_h(i)) & 0x48 for i in range(8))
    clock.set(30)
    for i in range(8):  # no gpu given: every GPU of the node
        reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(_h(i))
        assert reasons & 0x40 and reasons & 0x8
        assert pynvml.nvmlDeviceGetTemperatureV(_h(i), 0) >= 95
        assert pynvml.nvmlDeviceGetClockInfo(_h(i), pynvml.NVML_CLOCK_SM) <= 0.41 * before[i]
    clock.set(60)
    assert not pynvml.nvmlDeviceGetCurrentClocksEventReasons(_h(0)) & 0x48


def test_gpu_missing_hides_one_gpu_from_enumeration(nvml) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "gpu_missing"
node = "node-001"
gpu = 3
"""
    )
    assert pynvml.nvmlDeviceGetCount() == 7
    buses = [pynvml.nvmlDeviceGetPciInfo(_h(i)).bus for i in range(7)]
    assert 0x5D not in buses and len(set(buses)) == 7
    assert [pynvml.nvmlDeviceGetIndex(_h(i)) for i in range(7)] == list(range(7))


def test_recover_with_new_uuid_swaps_the_board(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "xid79"
node = "node-001"
gpu = 5
at = 10
[[fault]]
kind = "recover"
node = "node-001"
gpu = 5
at = 100
new_uuid = true
"""
    )
    before = [pynvml.nvmlDeviceGetUUID(_h(i)) for i in range(8)]
    clock.set(100)
    after = [pynvml.nvmlDeviceGetUUID(_h(i)) for i in range(8)]
    assert after[5] != before[5]
    assert after[:5] + after[6:] == before[:5] + before[6:]


def test_recover_clears_only_the_named_kinds(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "thermal_slowdown"
node = "node-001"
gpu = 0
at = 0
[[fault]]
kind = "row_remap_failure"
node = "node-001"
gpu = 0
at = 0
[[fault]]
kind = "recover"
node = "node-001"
at = 10
kinds = ["thermal_slowdown"]
"""
    )
    clock.set(10)
    assert not pynvml.nvmlDeviceGetCurrentClocksEventReasons(_h(0)) & 0x40
    assert pynvml.nvmlDeviceGetRemappedRows(_h(0))[3] == 1


def test_slow_gpu_keeps_nvml_readable(nvml, clock: ManualClock) -> None:
    nvml(
        scenario="""
[[fault]]
kind = "slow_gpu"
node = "node-001"
gpu = 1
factor = 4
"""
    )
    clock.set(5)
    assert pynvml.nvmlDeviceGetCurrentClocksEventReasons(_h(1)) & 0x48 == 0
    assert pynvml.nvmlDeviceGetPowerUsage(_h(1)) > 0
