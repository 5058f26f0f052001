"""Field values (``nvmlDeviceGetFieldValues``) of a simulated GPU.

Each supported field id maps to a function of the GPU's view; unsupported ids get a
per-field NotSupported, and a lost GPU gets GpuIsLost on every field, exactly as the
real call reports per-field results instead of failing as a whole.
"""

from __future__ import annotations

from collections.abc import Callable

from collectors.sim.cbase import ERROR_INVALID_ARGUMENT, ERROR_NOT_SUPPORTED, SUCCESS
from collectors.sim.model import GpuView
from collectors.sim.params import NVLINKS

TYPE_DOUBLE = 0
TYPE_UINT = 1
TYPE_ULL = 3

# NVLink per-link field ids: links 0-5 then 6-11 (the header's _L<n> names).
_PER_LINK = {
    "crc_flit": (32, 96),
    "crc_data": (39, 102),
    "replay": (46, 108),
    "recovery": (53, 114),
}
_TOTALS = {38: "crc_flit", 45: "crc_data", 52: "replay", 59: "recovery"}
_SCOPED = {161: "replay", 162: "recovery", 163: "crc_flit"}
FIELD_LINK_STATE = 165
FIELD_LINK_COUNT = 91

Getter = Callable[[GpuView], int]


def _counter(view: GpuView, counter: str, link: int) -> int:
    values: list[int] = getattr(view.faults, counter)
    return values[link]


def _simple_fields() -> dict[int, tuple[int, Getter]]:
    def ecc_unc_vol(v: GpuView) -> int:
        return v.faults.ecc_unc_vol

    def ecc_unc_agg(v: GpuView) -> int:
        return v.faults.ecc_unc_agg

    def zero(v: GpuView) -> int:
        return 0

    fields: dict[int, tuple[int, Getter]] = {
        1: (TYPE_UINT, lambda v: 1),  # ECC mode current: enabled
        2: (TYPE_UINT, lambda v: 1),  # ECC mode pending
        3: (TYPE_ULL, zero),
        4: (TYPE_ULL, ecc_unc_vol),
        5: (TYPE_ULL, zero),
        6: (TYPE_ULL, ecc_unc_agg),
        12: (TYPE_ULL, ecc_unc_vol),  # DBE volatile, device memory
        23: (TYPE_ULL, ecc_unc_agg),  # DBE aggregate, device memory
        29: (TYPE_ULL, zero),
        30: (TYPE_ULL, zero),
        31: (TYPE_ULL, zero),
        82: (TYPE_UINT, lambda v: v.reading.temp_c + 6),  # HBM runs a little hotter
        FIELD_LINK_COUNT: (TYPE_UINT, lambda v: NVLINKS),
        94: (TYPE_ULL, zero),
        142: (TYPE_UINT, lambda v: v.faults.remap_corr),
        143: (TYPE_UINT, lambda v: v.faults.remap_unc),
        144: (TYPE_UINT, lambda v: v.faults.remap_pending),
        145: (TYPE_UINT, lambda v: v.faults.remap_failure),
        185: (TYPE_UINT, lambda v: v.reading.power_mw),
        186: (TYPE_UINT, lambda v: v.reading.power_mw),
        230: (TYPE_UINT, lambda v: v.faults.recovery_action),
    }
    for fid in (7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 24, 25, 26, 27, 28):
        fields[fid] = (TYPE_ULL, zero)
    for counter, starts in _PER_LINK.items():
        for block, start in enumerate(starts):
            for offset in range(6):
                link = block * 6 + offset
                fields[start + offset] = (TYPE_ULL, _link_getter(counter, link))
    for fid, counter in _TOTALS.items():
        fields[fid] = (TYPE_ULL, _total_getter(counter))
    return fields


def _link_getter(counter: str, link: int) -> Getter:
    return lambda v: _counter(v, counter, link)


def _total_getter(counter: str) -> Getter:
    return lambda v: sum(getattr(v.faults, counter))


FIELDS = _simple_fields()


def field_value(view: GpuView, field_id: int, scope: int) -> tuple[int, int, int]:
    """(nvmlReturn, valueType, value) of one field on one GPU."""
    if field_id in _SCOPED or field_id == FIELD_LINK_STATE:
        if not 0 <= scope < NVLINKS:
            return ERROR_INVALID_ARGUMENT, TYPE_ULL, 0
        if field_id == FIELD_LINK_STATE:
            return SUCCESS, TYPE_UINT, int(view.faults.links_up[scope])
        return SUCCESS, TYPE_ULL, _counter(view, _SCOPED[field_id], scope)
    entry = FIELDS.get(field_id)
    if entry is None:
        return ERROR_NOT_SUPPORTED, TYPE_ULL, 0
    value_type, getter = entry
    return SUCCESS, value_type, getter(view)
