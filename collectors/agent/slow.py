"""The slow path: reliability counters and NVLink per link, every slow interval.

Each value has candidate sources, preferred first: a field id (all chosen field ids
of a GPU are read in ONE batched ``nvmlDeviceGetFieldValues`` call), else a classic
call, else a sum over links. :meth:`SlowPlan.probe` picks one per value at start.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, cast

import pynvml

from collectors.agent.fields import GPU_SLOW_FIELDS, NVLINK_FIELDS
from collectors.agent.nvmlcall import (
    UNSUPPORTED_CODES,
    FieldBatch,
    error_name,
    is_gpu_lost,
    is_unsupported,
)
from collectors.agent.wire import finite

Source = Union[int, Tuple[int, int], Callable[[Any], Any], str]
_SUM = "sum:"  # "sum:crc_flit" = the sum of that NVLINK_FIELDS value over links


def _ecc(kind: int, counter: int) -> Callable[[Any], Any]:
    return lambda h: pynvml.nvmlDeviceGetTotalEccErrors(h, kind, counter)


def _remapped(slot: int) -> Callable[[Any], Any]:
    return lambda h: int(pynvml.nvmlDeviceGetRemappedRows(h)[slot])


def _retired(cause: int) -> Callable[[Any], Any]:
    return lambda h: len(pynvml.nvmlDeviceGetRetiredPages(h, cause))


def _power_limit(handle: Any) -> Any:
    return finite(pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)


def _total_energy(handle: Any) -> Any:
    return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle))


def _mem_clock(handle: Any) -> Any:
    return pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)


def _mgmt_limit(handle: Any) -> Any:
    return finite(pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000.0)


def _fabric(handle: Any) -> Any:
    """The GPU fabric's info (NVSwitch systems); v3 carries the health summary."""
    make = getattr(pynvml, "c_nvmlGpuFabricInfo_v3_t", None)
    if make is None:  # an older pynvml without the v3 struct: as if the call did not exist
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
    info = make()
    pynvml.nvmlDeviceGetGpuFabricInfoV(handle, ctypes.byref(info))  # pynvml passes it as is
    return info


def _fabric_summary(handle: Any) -> Any:
    return int(_fabric(handle).healthSummary)


def _fabric_mask(handle: Any) -> Any:
    return int(_fabric(handle).healthMask)


_CORR, _UNC = pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
_VOL, _AGG = pynvml.NVML_VOLATILE_ECC, pynvml.NVML_AGGREGATE_ECC

# nvlink_active and nvlink_total are derived from the per-link state.
SLOW_SOURCES: Dict[str, List[Source]] = {
    "ecc_corr_vol": [pynvml.NVML_FI_DEV_ECC_SBE_VOL_TOTAL, _ecc(_CORR, _VOL)],
    "ecc_unc_vol": [pynvml.NVML_FI_DEV_ECC_DBE_VOL_TOTAL, _ecc(_UNC, _VOL)],
    "ecc_corr_agg": [pynvml.NVML_FI_DEV_ECC_SBE_AGG_TOTAL, _ecc(_CORR, _AGG)],
    "ecc_unc_agg": [pynvml.NVML_FI_DEV_ECC_DBE_AGG_TOTAL, _ecc(_UNC, _AGG)],
    "retired_sbe": [pynvml.NVML_FI_DEV_RETIRED_SBE, _retired(0)],
    "retired_dbe": [pynvml.NVML_FI_DEV_RETIRED_DBE, _retired(1)],
    "retired_pending": [
        pynvml.NVML_FI_DEV_RETIRED_PENDING,
        pynvml.nvmlDeviceGetRetiredPagesPendingStatus,
    ],
    "remap_corr": [pynvml.NVML_FI_DEV_REMAPPED_COR, _remapped(0)],
    "remap_unc": [pynvml.NVML_FI_DEV_REMAPPED_UNC, _remapped(1)],
    "remap_pending": [pynvml.NVML_FI_DEV_REMAPPED_PENDING, _remapped(2)],
    "remap_failure": [pynvml.NVML_FI_DEV_REMAPPED_FAILURE, _remapped(3)],
    "pcie_replay": [pynvml.NVML_FI_DEV_PCIE_REPLAY_COUNTER, pynvml.nvmlDeviceGetPcieReplayCounter],
    "recovery_action": [pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION],
    "nvlink_replay": [pynvml.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, _SUM + "replay"],
    "nvlink_recovery": [pynvml.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, _SUM + "recovery"],
    "nvlink_crc_flit": [pynvml.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, _SUM + "crc_flit"],
    "nvlink_crc_data": [pynvml.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, _SUM + "crc_data"],
    "power_limit_w": [_power_limit],
    "pcie_gen": [pynvml.nvmlDeviceGetCurrPcieLinkGeneration],
    "pcie_gen_max": [pynvml.nvmlDeviceGetMaxPcieLinkGeneration],
    "pcie_width": [pynvml.nvmlDeviceGetCurrPcieLinkWidth],
    "pcie_width_max": [pynvml.nvmlDeviceGetMaxPcieLinkWidth],
    "energy_mj": [pynvml.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, _total_energy],
    "mem_clock_mhz": [_mem_clock],
    "memory_temp_c": [pynvml.NVML_FI_DEV_MEMORY_TEMP],
    "power_mgmt_limit_w": [_mgmt_limit],
    "fabric_health_summary": [_fabric_summary],
    "fabric_health_mask": [_fabric_mask],
}


def _counter(link: int, counter: int) -> Callable[[Any], Any]:
    return lambda h: pynvml.nvmlDeviceGetNvLinkErrorCounter(h, link, counter)


def link_sources(link: int) -> Dict[str, List[Source]]:
    """Sources of the NVLINK_FIELDS values of one link: scoped field ids, then calls."""
    data: List[Source] = []
    if link < 6:  # per-link CRC data counters only exist as fields for links 0-11
        data.append(pynvml.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L0 + link)
    elif link < 12:
        data.append(pynvml.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L6 + link - 6)
    data.append(_counter(link, pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA))
    return {
        "state": [
            (pynvml.NVML_FI_DEV_NVLINK_GET_STATE, link),
            lambda h: pynvml.nvmlDeviceGetNvLinkState(h, link),
        ],
        "replay": [
            (pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, link),
            _counter(link, pynvml.NVML_NVLINK_ERROR_DL_REPLAY),
        ],
        "recovery": [
            (pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY, link),
            _counter(link, pynvml.NVML_NVLINK_ERROR_DL_RECOVERY),
        ],
        "crc_flit": [
            (pynvml.NVML_FI_DEV_NVLINK_ERROR_DL_CRC, link),
            _counter(link, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT),
        ],
        "crc_data": data,
    }


class _Value:
    """One value to read: its name, candidate sources and the one chosen at start."""

    __slots__ = ("candidates", "chosen", "name", "position")

    def __init__(self, name: str, candidates: List[Source]) -> None:
        self.name = name
        self.candidates = list(candidates)
        self.position = 0
        self.chosen: Optional[Source] = None

    @property
    def current(self) -> Optional[Source]:
        return self.candidates[self.position] if self.position < len(self.candidates) else None


def _is_field(source: Optional[Source]) -> bool:
    return isinstance(source, (int, tuple))


def count_links(handle: Any) -> int:
    """NVLinks the GPU has: FI 91, else the first link whose state call fails."""
    try:
        ((code, value),) = FieldBatch([pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT]).read(handle)
        if code == pynvml.NVML_SUCCESS:
            return int(value)
    except pynvml.NVMLError as exc:
        if is_gpu_lost(exc):
            raise
    links = 0
    while links < pynvml.NVML_NVLINK_MAX_LINKS:
        try:
            pynvml.nvmlDeviceGetNvLinkState(handle, links)
        except pynvml.NVMLError as exc:
            if is_gpu_lost(exc):
                raise
            break
        links += 1
    return links


class SlowPlan:
    """What one GPU's slow tick reads, and how; built once by :meth:`probe`."""

    def __init__(self, links: int) -> None:
        self.links = links
        self._values = [_Value(n, s) for n, s in SLOW_SOURCES.items()]
        self._link_values = [
            [_Value("nvlink%d.%s" % (link, n), s) for n, s in link_sources(link).items()]
            for link in range(links)
        ]
        self._batch = FieldBatch([])
        self._batched: List[_Value] = []
        self._called: List[_Value] = []

    def _all(self) -> List[_Value]:
        return self._values + [v for link in self._link_values for v in link]

    def probe(self, handle: Any) -> List[str]:
        """Choose a source per value; returns the slow fields this GPU cannot report.

        Raises:
            pynvml.NVMLError: NVMLError_GpuIsLost, the GPU is gone.
        """
        pending = [v for v in self._all()]
        while pending:
            for value in pending:
                if isinstance(value.current, str):
                    value.chosen = value.current  # a sum over links, decided below
            self._try_fields(handle, [v for v in pending if _is_field(v.current)])
            self._try_calls(handle, [v for v in pending if callable(v.current)])
            pending = [v for v in pending if v.chosen is None and v.current is not None]
        self._settle_sums()
        chosen = [v for v in self._all() if v.chosen is not None]
        self._batched = [v for v in chosen if _is_field(v.chosen)]
        self._called = [v for v in chosen if callable(v.chosen)]
        self._batch = FieldBatch([v.chosen for v in self._batched])  # type: ignore[misc]
        return self._unsupported()

    def _try_fields(self, handle: Any, values: List[_Value]) -> None:
        try:
            results = FieldBatch([v.current for v in values]).read(handle)  # type: ignore[misc]
        except pynvml.NVMLError as exc:
            if is_gpu_lost(exc):
                raise
            if not is_unsupported(exc):
                # The call exists but failed this time: keep the fields, ticks report errors.
                for value in values:
                    value.chosen = value.current
                return
            results = [(exc.value, None)] * len(values)
        for value, (code, _) in zip(values, results):
            if code == pynvml.NVML_ERROR_GPU_IS_LOST:
                raise pynvml.NVMLError(code)
            if code in UNSUPPORTED_CODES:
                value.position += 1
            else:
                value.chosen = value.current

    def _try_calls(self, handle: Any, values: List[_Value]) -> None:
        for value in values:
            try:
                cast(Callable[[Any], Any], value.current)(handle)
            except Exception as exc:
                if is_gpu_lost(exc):
                    raise
                if is_unsupported(exc):
                    value.position += 1
                    continue
            value.chosen = value.current

    def _settle_sums(self) -> None:
        """A sum over links stands only if some link reports that value."""
        for value in self._values:
            if isinstance(value.chosen, str):
                slot = NVLINK_FIELDS.index(value.chosen[len(_SUM) :])
                if not any(link[slot].chosen is not None for link in self._link_values):
                    value.chosen = None

    def _unsupported(self) -> List[str]:
        names = [v.name for v in self._values if v.chosen is None]
        for slot, field in enumerate(NVLINK_FIELDS):
            if any(link[slot].chosen is None for link in self._link_values):
                names.append("nvlink." + field)
        return names

    def read(self, handle: Any) -> Tuple[List[Any], Optional[List[List[Any]]], Dict[str, str]]:
        """``(slow values in GPU_SLOW_FIELDS order, per-link values or None, errors)``.

        Raises:
            pynvml.NVMLError: NVMLError_GpuIsLost, the GPU is gone.
        """
        got: Dict[str, Any] = {}
        errs: Dict[str, str] = {}
        self._read_batch(handle, got, errs)
        for value in self._called:
            try:
                got[value.name] = cast(Callable[[Any], Any], value.chosen)(handle)
            except Exception as exc:
                if is_gpu_lost(exc):
                    raise
                errs[value.name] = error_name(exc)
        links = [[got.get(v.name) for v in link] for link in self._link_values]
        return self._slow_row(got, links), (links if self.links else None), errs

    def _read_batch(self, handle: Any, got: Dict[str, Any], errs: Dict[str, str]) -> None:
        try:
            results = self._batch.read(handle)
        except pynvml.NVMLError as exc:
            if is_gpu_lost(exc):
                raise
            for value in self._batched:
                errs[value.name] = error_name(exc)
            return
        for value, (code, result) in zip(self._batched, results):
            if code == pynvml.NVML_SUCCESS:
                got[value.name] = result
            elif code == pynvml.NVML_ERROR_GPU_IS_LOST:
                raise pynvml.NVMLError(code)
            else:
                errs[value.name] = error_name(pynvml.NVMLError(code))

    def _slow_row(self, got: Dict[str, Any], links: List[List[Any]]) -> List[Any]:
        for value in self._values:
            if isinstance(value.chosen, str):
                slot = NVLINK_FIELDS.index(value.chosen[len(_SUM) :])
                parts = [link[slot] for link in links if link[slot] is not None]
                got[value.name] = sum(parts) if parts else None
        states = [link[0] for link in links if link[0] is not None]
        got["nvlink_total"] = self.links
        got["nvlink_active"] = sum(1 for s in states if s == 1) if states or not links else None
        return [got.get(name) for name in GPU_SLOW_FIELDS]
