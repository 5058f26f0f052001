"""Frozen snapshot objects from tracks: called only for what changed since the last snapshot."""

from __future__ import annotations

from fleet.model import GpuSnapshot, PortSnapshot
from fleet.state.gpu import GpuTrack
from fleet.state.layout import FieldIndex, pick, pick_flag, pick_int
from fleet.state.port import IB_DATA_UNIT, PortTrack

_MIB = 1 << 20
_FAST_FLOATS = ("util_gpu", "util_mem", "sm_active", "tensor_active", "power_w", "temp_c")
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
)
# Port and NIC fields that are states or rates, not counters.
_NOT_COUNTERS = frozenset(("state", "phys_state", "rate_gbps", "up", "speed_mbps"))
_SLOW_FLAGS = ("retired_pending", "remap_pending", "remap_failure")


def _float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def gpu_snapshot(track: GpuTrack, fast: FieldIndex, slow: FieldIndex) -> GpuSnapshot:
    """A GpuSnapshot of the track's latest readings and verdict."""
    info, row, srow = track.info, track.fast, track.slow
    values: dict[str, object] = {name: _float(pick(row, fast[name])) for name in _FAST_FLOATS}
    values.update({name: pick_int(srow, slow[name]) for name in _SLOW_INTS})
    values.update({name: pick_flag(srow, slow[name]) for name in _SLOW_FLAGS})
    mem = pick(row, fast["mem_used_mib"])
    limit = pick(srow, slow["power_limit_w"])
    return GpuSnapshot(
        index=info.index,
        uuid=info.uuid,
        name=info.name,
        serial=info.serial,
        pci_bus_id=info.pci_bus_id,
        memory_total_bytes=info.memory_total_bytes,
        lost=track.facts.lost,
        mem_used_bytes=None if mem is None else int(mem * _MIB),
        power_limit_w=_float(limit) if limit is not None else info.power_limit_w,
        sm_clock_mhz=_float(pick(row, fast["sm_clock_mhz"])),
        clock_reasons=pick_int(row, fast["clock_reasons"]),
        pstate=pick_int(row, fast["pstate"]),
        nvlink_crc_rate=track.crc.rate,
        nvlink_replay_delta=track.replay.delta,
        nvlink_recovery_delta=track.recovery.delta,
        field_errors=track.errors,
        verdict=track.verdict,
        reasons=track.reasons,
        since=track.since,
        **values,  # type: ignore[arg-type]
    )


def port_snapshot(track: PortTrack, expected_rate: float | None) -> PortSnapshot:
    """A PortSnapshot of the track's latest readings, rates and verdict."""
    facts, judgement = track.facts, track.judgement
    row, names = track.row, track.index.names
    counters = tuple(
        (name, None if value is None else int(value))
        for name, value in zip(names, row or (), strict=False)
        if name not in _NOT_COUNTERS
    ) + tuple(track.hw.items())
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
