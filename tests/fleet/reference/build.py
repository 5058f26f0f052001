"""Frozen snapshot objects from tracks: called only for what changed since the last snapshot."""

from __future__ import annotations

import dataclasses

from bench.lib.reference_gpu import GpuTrack
from fleet.model import GpuSnapshot, PortSnapshot
from fleet.state.layout import FieldIndex, pick
from tests.fleet.reference.port import IB_DATA_UNIT, PortTrack

_MIB = 1 << 20
_FAST_NUMBERS = (
    "util_gpu",
    "util_mem",
    "sm_active",
    "tensor_active",
    "power_w",
    "temp_c",
    "sm_clock_mhz",
)
_SLOW_INTS = (
    "ecc_corr_vol",
    "ecc_unc_vol",
    "ecc_corr_agg",
    "ecc_unc_agg",
    "retired_sbe",
    "retired_dbe",
    "remap_corr",
    "remap_unc",
    "pcie_replay",
    "recovery_action",
    "nvlink_active",
    "nvlink_total",
    "pcie_gen",
    "pcie_gen_max",
    "pcie_width",
    "pcie_width_max",
    "energy_mj",
    "foreign_mem_mib",
    "foreign_procs",
    "renter_procs",
    "mem_clock_mhz",
    "memory_temp_c",
    "fabric_health_summary",
    "fabric_health_mask",
)
_SLOW_FLAGS = ("retired_pending", "remap_pending", "remap_failure")
_SLOW_FLOATS = ("power_mgmt_limit_w",)


def _float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


# GpuSnapshot is built positionally from a per-GPU list (the model's field order, read
# at import): ~50 keyword arguments per GPU per tick cost more than the object itself.
_GPU_FIELDS = dataclasses.fields(GpuSnapshot)
_GPU_AT = {f.name: i for i, f in enumerate(_GPU_FIELDS)}
_GPU_DEFAULTS: list[object] = [
    None if f.default is dataclasses.MISSING else f.default for f in _GPU_FIELDS
]
_AT_LOST, _AT_ERRORS, _AT_VERDICT, _AT_REASONS, _AT_SINCE = (
    _GPU_AT[n] for n in ("lost", "field_errors", "verdict", "reasons", "since")
)
_AT_MEM, _AT_CLOCK, _AT_PSTATE = (_GPU_AT[n] for n in ("mem_used_bytes", "clock_reasons", "pstate"))


def steady_values(track: GpuTrack, slow: FieldIndex) -> list[object]:
    """Identity and slow-tick fields in GpuSnapshot order (cached until the next slow row)."""
    cached = track.slow_values
    if cached is None:
        info, srow = track.info, track.slow
        cached = list(_GPU_DEFAULTS)
        steady: dict[str, object] = {
            "index": info.index,
            "uuid": info.uuid,
            "name": info.name,
            "serial": info.serial,
            "pci_bus_id": info.pci_bus_id,
            "memory_total_bytes": info.memory_total_bytes,
            "nvlink_crc_rate": track.crc.rate,
            "nvlink_replay_delta": track.replay.delta,
            "nvlink_recovery_delta": track.recovery.delta,
        }
        if srow is not None:  # slow rows are padded to the declared length at ingest
            for name, i in slow.plan(_SLOW_INTS):
                value = srow[i]
                steady[name] = None if value is None else int(value)
            for name, i in slow.plan(_SLOW_FLAGS):
                value = srow[i]
                steady[name] = None if value is None else bool(value)
            for name, i in slow.plan(_SLOW_FLOATS):
                steady[name] = _float(srow[i])
        limit = pick(srow, slow["power_limit_w"])
        steady["power_limit_w"] = _float(limit) if limit is not None else info.power_limit_w
        for name, reading in steady.items():
            cached[_GPU_AT[name]] = reading
        track.slow_values = cached
    return cached


def gpu_snapshot(track: GpuTrack, fast: FieldIndex, slow: FieldIndex) -> GpuSnapshot:
    """A GpuSnapshot of the track's latest readings and verdict."""
    values = steady_values(track, slow).copy()
    row = track.fast
    if row is not None:  # rows are padded to the declared length at ingest
        # JSON numbers pass as they are: an int is a valid float reading.
        for at, i in fast.routes(_FAST_NUMBERS, _GPU_AT):
            values[at] = row[i]
        mem = pick(row, fast["mem_used_mib"])
        reasons = pick(row, fast["clock_reasons"])
        pstate = pick(row, fast["pstate"])
        values[_AT_MEM] = None if mem is None else int(mem * _MIB)
        values[_AT_CLOCK] = None if reasons is None else int(reasons)
        values[_AT_PSTATE] = None if pstate is None else int(pstate)
    values[_AT_LOST] = track.facts.lost
    values[_AT_ERRORS] = track.errors
    values[_AT_VERDICT] = track.verdict
    values[_AT_REASONS] = track.reasons
    values[_AT_SINCE] = track.since
    return GpuSnapshot(*values)  # type: ignore[arg-type]


def port_snapshot(track: PortTrack, expected_rate: float | None) -> PortSnapshot:
    """A PortSnapshot of the track's latest readings, rates and verdict."""
    facts, judgement = track.facts, track.judgement
    counters = track.counter_view()
    if track.hw:
        counters += tuple(track.hw.items())
    if track.is_nic:
        rx, tx = track.rate("rx_bytes"), track.rate("tx_bytes")
        link_downed, downed_total = None, 0
    else:
        rx = track.rate("port_rcv_data", IB_DATA_UNIT)
        tx = track.rate("port_xmit_data", IB_DATA_UNIT)
        downed = track.counters.get("link_downed")
        link_downed = None if downed is None else downed.value
        downed_total = 0 if downed is None else downed.total
    return PortSnapshot(
        name=facts.name,
        kind=facts.kind,
        state=facts.state,
        phys_state=facts.phys_state,
        rate_gbps=facts.rate_gbps,
        expected_rate_gbps=expected_rate,
        link_downed=link_downed,
        link_downed_delta=downed_total,
        symbol_error_rate=facts.symbol_error_rate,
        rcv_error_rate=facts.rcv_error_rate,
        xmit_discard_rate=facts.xmit_discard_rate,
        rx_bytes_per_s=rx,
        tx_bytes_per_s=tx,
        counters=counters,
        verdict=judgement.verdict,
        reasons=judgement.reasons,
        since=track.since,
    )
