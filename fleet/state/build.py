"""Snapshot objects from a tick's frozen parts: built only when a reader asks for them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import msgspec

from collectors.protocol import GpuInfo, Value
from fleet.briefs import PortAlarms
from fleet.model import GpuBrief, GpuSnapshot, PortBrief, PortSnapshot
from fleet.state.gpu import GpuTrack
from fleet.state.layout import FieldIndex, Row, pick
from fleet.state.port import IB_DATA_UNIT, PortTrack
from fleet.state.port_tick import PortReadings

# counter names and their reader, the port's slot, is it a NIC, the declared row width
PortStatic = tuple[tuple[str, ...], Callable[[Row], tuple[Value, ...]], int, bool, int]

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
SLOW_INTS = (
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
SLOW_FLAGS = ("retired_pending", "remap_pending", "remap_failure")
SLOW_FLOATS = ("power_mgmt_limit_w",)


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


class SteadyGpu(msgspec.Struct, gc=False, eq=False):
    """A GPU's identity and slow-tick readings as of its latest slow sample.

    Taken when a slow row, NVLink counters or a new session arrive (references only);
    the GpuSnapshot field values are worked out on the first build and kept. ``crc_rate``,
    ``replay`` and ``recovery``: the CRC rate and the replay and recovery increments of
    the row. Not tracked by the cyclic collector (it refers to nothing that refers back
    to it): one per GPU, kept until the next slow row (fleet.state.rows says why).
    """

    info: GpuInfo
    row: Row | None
    index: FieldIndex
    crc_rate: float | None
    replay: int | None
    recovery: int | None
    _values: list[object] | None = None

    def values(self) -> list[object]:
        """Identity and slow-tick fields in GpuSnapshot order (a list never written again)."""
        if self._values is None:
            self._values = self._work_out()
        return self._values

    def _work_out(self) -> list[object]:
        info, srow, slow = self.info, self.row, self.index
        values = list(_GPU_DEFAULTS)
        steady: dict[str, object] = {
            "index": info.index,
            "uuid": info.uuid,
            "name": info.name,
            "serial": info.serial,
            "pci_bus_id": info.pci_bus_id,
            "memory_total_bytes": info.memory_total_bytes,
            "nvlink_crc_rate": self.crc_rate,
            "nvlink_replay_delta": self.replay,
            "nvlink_recovery_delta": self.recovery,
        }
        if srow is not None:  # slow rows are padded to the declared length at ingest
            for name, i in slow.plan(SLOW_INTS):
                value = srow[i]
                steady[name] = None if value is None else int(value)
            for name, i in slow.plan(SLOW_FLAGS):
                value = srow[i]
                steady[name] = None if value is None else bool(value)
            for name, i in slow.plan(SLOW_FLOATS):
                steady[name] = _float(srow[i])
        limit = pick(srow, slow["power_limit_w"])
        steady["power_limit_w"] = _float(limit) if limit is not None else info.power_limit_w
        for name, reading in steady.items():
            values[_GPU_AT[name]] = reading
        return values


def steady_of(track: GpuTrack, slow: FieldIndex) -> SteadyGpu:
    """The track's steady readings (the same object until the next slow row)."""
    steady = track.slow_values
    if steady is None:
        steady = track.slow_values = SteadyGpu(
            track.info, track.slow, slow, track.crc.rate, track.replay.delta, track.recovery.delta
        )
    return steady


_QUIET_NVLINK = (0.0, 0, 0)


class QuietSteady(msgspec.Struct, gc=False, eq=False):
    """A node's steady readings after a slow tick that moved no health fact and no NVLink
    count (:mod:`fleet.state.slow_ingest`): every GPU's CRC rate is 0 and its replay and
    recovery increments are 0, so the node's rows are all they need. The SteadyGpu
    objects are built on first read: most slow ticks nobody reads them. Not tracked by
    the cyclic collector, as :class:`SteadyGpu`.
    """

    infos: Sequence[GpuInfo]
    rows: Sequence[Row]
    index: FieldIndex
    _built: tuple[SteadyGpu, ...] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def gpus(self) -> tuple[SteadyGpu, ...]:
        """Each GPU's steady readings (built once)."""
        if self._built is None:
            index = self.index
            self._built = tuple(
                SteadyGpu(info, row, index, *_QUIET_NVLINK)
                for info, row in zip(self.infos, self.rows, strict=True)
            )
        return self._built


Steady = tuple[SteadyGpu, ...] | QuietSteady


def gpu_snapshot(
    brief: GpuBrief,
    steady: SteadyGpu,
    row: Row | None,
    errors: tuple[tuple[str, str], ...],
    fast: FieldIndex,
) -> GpuSnapshot:
    """A GpuSnapshot from one GPU's frozen parts: steady values, fast row and verdict."""
    values = steady.values().copy()
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
    values[_AT_LOST] = brief.lost
    values[_AT_ERRORS] = errors
    values[_AT_VERDICT] = brief.verdict
    values[_AT_REASONS] = brief.reasons
    values[_AT_SINCE] = brief.since
    return GpuSnapshot(*values)  # type: ignore[arg-type]


def port_static(track: PortTrack) -> PortStatic:
    """What a PortSnapshot needs of ``track`` that holds for the whole session."""
    return (track.counter_names, track.counter_values, track.slot, track.is_nic, len(track.index))


def port_alarms(static: PortStatic, tick: PortReadings) -> PortAlarms:
    """The error readings :func:`port_snapshot` gives the port, without building it."""
    if static[3]:  # a NIC
        return PortAlarms(0, None, tick.rate("rx_errors"))
    return PortAlarms(
        tick.total("link_downed"), tick.rate("symbol_error"), tick.rate("port_rcv_errors")
    )


def port_snapshot(
    brief: PortBrief,
    static: PortStatic,
    row: Row | None,
    hw: Mapping[str, int],
    tick: PortReadings,
) -> PortSnapshot:
    """A PortSnapshot from one port's brief, session facts, raw row and the tick's rates."""
    names, reader, _, is_nic, width = static
    counters: tuple[tuple[str, int | None], ...] = ()
    if row is not None:
        if len(row) < width:  # a short row reads as missing values
            row = [*row, *([None] * (width - len(row)))]
        # sysfs counters are integers; the agent sends them as JSON integers.
        counters = tuple(zip(names, reader(row), strict=True))  # type: ignore[arg-type]
    if hw:
        counters += tuple(hw.items())
    if is_nic:
        rx, tx = tick.rate("rx_bytes"), tick.rate("tx_bytes")
        symbol, rcv, discards = None, tick.rate("rx_errors"), None
        downed_total = 0
    else:
        rx = tick.rate("port_rcv_data", IB_DATA_UNIT)
        tx = tick.rate("port_xmit_data", IB_DATA_UNIT)
        symbol = tick.rate("symbol_error")
        rcv = tick.rate("port_rcv_errors")
        discards = tick.rate("port_xmit_discards")
        downed_total = tick.total("link_downed")
    return PortSnapshot(
        name=brief.name,
        kind=brief.kind,
        state=brief.state,
        phys_state=brief.phys_state,
        rate_gbps=brief.rate_gbps,
        expected_rate_gbps=brief.expected_rate_gbps,
        link_downed=brief.link_downed,
        link_downed_delta=downed_total,
        symbol_error_rate=symbol,
        rcv_error_rate=rcv,
        xmit_discard_rate=discards,
        rx_bytes_per_s=rx,
        tx_bytes_per_s=tx,
        counters=counters,
        verdict=brief.verdict,
        reasons=brief.reasons,
        since=brief.since,
    )
