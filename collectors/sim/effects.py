"""What a node's faults do to its GPUs and ports at a given time.

Every effect is a pure function of the scenario and the elapsed time, so a test with
an injected clock can jump to any instant and read the state it would have seen. A
fault holds from ``at`` until its ``until`` or the first ``recover`` that clears it.
Counters are cumulative: what a fault added stays added after it ends, except the
volatile ECC counts, which a recovery (a GPU reset or reboot) clears.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from collectors.sim.jobs import SimJob, gpu_pids, running_jobs
from collectors.sim.params import NVLINKS
from collectors.sim.scenario import Fault, Scenario, fault_end

EVENT_DBE = 0x2
EVENT_XID = 0x8
CLOCK_HW_SLOWDOWN = 0x8
CLOCK_HW_THERMAL = 0x40
GIB = 1 << 30


@dataclass(frozen=True, slots=True)
class SimEvent:
    """An NVML event the node emits at ``at`` seconds."""

    at: float
    gpu: int
    event_type: int
    data: int


@dataclass(slots=True)
class GpuFaultState:
    """The fault-driven part of one GPU's state at one instant."""

    lost: bool = False
    ecc_unc_vol: int = 0
    ecc_unc_agg: int = 0
    remap_corr: int = 0
    remap_unc: int = 0
    remap_pending: int = 0
    remap_failure: int = 0
    recovery_action: int = 0
    links_up: list[bool] = field(default_factory=lambda: [True] * NVLINKS)
    replay: list[int] = field(default_factory=lambda: [0] * NVLINKS)
    recovery: list[int] = field(default_factory=lambda: [0] * NVLINKS)
    crc_flit: list[int] = field(default_factory=lambda: [0] * NVLINKS)
    crc_data: list[int] = field(default_factory=lambda: [0] * NVLINKS)
    thermal: tuple[int, float] | None = None  # (temperature C, clock factor)
    slow_factor: float = 1.0
    generation: int = 0  # bumps when a recover swaps the board (new UUID)
    reserved_bytes: int = 0  # held by the provider's resident process (memory_reserved)
    power_cap_w: int | None = None  # enforced power limit while power_capped holds
    pcie: tuple[int, int] | None = None  # (gen, width) of the link while pcie_degraded holds
    provider_load: bool = False  # the provider's check runs on the GPU now
    job: SimJob | None = None  # the scheduler job (``job`` kind) holding the GPU now
    job_pids: tuple[int, ...] = ()  # its processes NVML lists on the GPU (none if idle)


@dataclass(slots=True)
class PortFaultState:
    """The fault-driven part of one HCA port's state at one instant."""

    state: int = 4  # ACTIVE
    phys_state: int = 5  # LinkUp
    rate: str | None = None  # None: the nominal rate
    link_downed: int = 0
    link_error_recovery: int = 0
    symbol_error: int = 0
    port_rcv_errors: int = 0
    down_intervals: list[tuple[float, float]] = field(default_factory=list)  # up to now


class NodeFaults:
    """The faults of one node, with their end times resolved once."""

    def __init__(self, scenario: Scenario, node: str, gpus: int) -> None:
        self.node = node
        self.gpus = gpus
        self._faults = [(f, fault_end(scenario, f)) for f in scenario.faults_for(node)]
        self._jobs = self.of_kind("job")
        self._replaced = self.of_kind("node_replaced")
        self._boots = self.of_kind("reboot") + self._replaced
        self.events = tuple(sorted(self._events(), key=lambda e: (e.at, e.gpu, e.event_type)))

    def of_kind(self, kind: str) -> list[tuple[Fault, float]]:
        """(fault, end) pairs of one kind."""
        return [(f, end) for f, end in self._faults if f.kind == kind]

    def hung(self, t: float) -> bool:
        """True while an ``agent_hang`` fault holds at ``t``."""
        return any(f.at <= t < end for f, end in self.of_kind("agent_hang"))

    def missing_gpus(self, t: float) -> frozenset[int]:
        """Physical indices hidden by ``gpu_missing`` at ``t``."""
        return frozenset(
            self.gpus - 1 if f.gpu is None else f.gpu
            for f, end in self.of_kind("gpu_missing")
            if f.at <= t < end
        )

    def gpu_state(self, gpu: int, t: float) -> GpuFaultState:
        """The fault state of physical GPU ``gpu`` at ``t``."""
        state = GpuFaultState()
        for fault, end in self._faults:
            if fault.at <= t and fault.covers_gpu(gpu) and fault.kind in _GPU_EFFECTS:
                _GPU_EFFECTS[fault.kind](state, fault, t, t < end, end)
        state.generation = sum(
            1
            for f, _ in self.of_kind("recover")
            if f.params.get("new_uuid") and f.at <= t and f.covers_gpu(gpu)
        ) + self.replacements(t)  # a replaced node's boards are all new
        if self._jobs:
            jobs = self.running_jobs(t)
            state.job = next((j for j in jobs if gpu in j.gpus), None)
            state.job_pids = tuple(gpu_pids(jobs, gpu))
        return state

    def replacements(self, t: float) -> int:
        """``node_replaced`` faults at or before ``t``: the machine's generation."""
        return sum(1 for f, _ in self._replaced if f.at <= t)

    def boots(self, t: float) -> int:
        """Reboots (``reboot`` and ``node_replaced``) at or before ``t``."""
        return sum(1 for f, _ in self._boots if f.at <= t)

    def running_jobs(self, t: float) -> list[SimJob]:
        """The scheduler jobs (``job`` faults) running at ``t``."""
        return running_jobs(self._jobs, t, self.gpus) if self._jobs else []

    def port_state(self, port: int, t: float) -> PortFaultState:
        """The fault state of HCA ``port`` at ``t``."""
        state = PortFaultState()
        for fault, end in self._faults:
            if fault.port == port and fault.at <= t and fault.kind in _PORT_EFFECTS:
                _PORT_EFFECTS[fault.kind](state, fault, t, t < end, end)
        return state

    def _events(self) -> list[SimEvent]:
        events = []
        for fault, _ in self._faults:
            gpus = range(self.gpus) if fault.gpu is None else (fault.gpu,)
            for gpu in gpus:
                for event_type, data in _fault_events(fault):
                    events.append(SimEvent(fault.at, gpu, event_type, data))
        return events


def _fault_events(fault: Fault) -> list[tuple[int, int]]:
    xids = {"xid79": 79, "row_remap_pending": 63, "row_remap_failure": 64, "nvlink_down": 74}
    if fault.kind == "ecc_dbe":
        return [(EVENT_DBE, 0), (EVENT_XID, int(fault.params["xid"]))]
    if fault.kind in xids:
        return [(EVENT_XID, xids[fault.kind])]
    return []


def _held(fault: Fault, t: float, end: float) -> float:
    """Seconds the fault has held by time ``t``."""
    return max(0.0, min(t, end) - fault.at)


def _xid79(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    state.lost = state.lost or active


def _ecc_dbe(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    count = int(fault.params["count"])
    state.ecc_unc_agg += count
    if active:
        state.ecc_unc_vol += count
        state.remap_pending = 1
        state.recovery_action = max(state.recovery_action, int(fault.params["recovery_action"]))
    else:
        state.remap_unc += count  # the reset applied the pending remap


def _remap_pending(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    if active:
        state.remap_pending = 1
    elif fault.params["cause"] == "uncorrectable":
        state.remap_unc += 1
    else:
        state.remap_corr += 1


def _remap_failure(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    if active:
        state.remap_failure = 1
        state.recovery_action = max(state.recovery_action, 1)


def _crc_storm(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    link = int(fault.params["link"])
    held = _held(fault, t, end)
    rate = float(fault.params["rate"])
    state.crc_flit[link] += math.floor(rate * held)
    state.crc_data[link] += math.floor(rate * held / 4)
    state.replay[link] += math.floor(held / float(fault.params["replay_every"]))


def _nvlink_down(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    link = int(fault.params["link"])
    state.recovery[link] += 1
    if active:
        state.links_up[link] = False


def _thermal(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    if active:
        state.thermal = (int(fault.params["temp"]), float(fault.params["clock_factor"]))


def _slow(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    if active:
        state.slow_factor = max(state.slow_factor, float(fault.params["factor"]))


def _link_down(state: PortFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    stop = min(t, end)
    if not fault.params["flap"]:
        intervals = [(fault.at, stop)]
    else:
        down_s = float(fault.params["down_s"])
        period = down_s + float(fault.params["up_s"])
        # Down periods start at at, at + period, ... and are cut short by the fault's end.
        starts = (fault.at + k * period for k in range(math.ceil((stop - fault.at) / period) + 1))
        intervals = [(s, min(s + down_s, stop)) for s in starts if s < stop or s == t < end]
    state.link_downed += len(intervals)
    state.link_error_recovery += len(intervals)  # each downing followed a failed retrain
    state.down_intervals.extend(intervals)
    if active and intervals and intervals[-1][0] <= t < intervals[-1][0] + _down_length(fault):
        state.state, state.phys_state = 1, 2  # DOWN, Polling


def _down_length(fault: Fault) -> float:
    return float(fault.params["down_s"]) if fault.params["flap"] else math.inf


def _symbol_errors(state: PortFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    errors = math.floor(float(fault.params["rate"]) * _held(fault, t, end))
    state.symbol_error += errors
    state.port_rcv_errors += errors // 10


def _degraded(state: PortFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    if active:
        state.rate = str(fault.params["rate"])


def _memory_reserved(
    state: GpuFaultState, fault: Fault, t: float, active: bool, end: float
) -> None:
    if active:
        state.reserved_bytes += round(float(fault.params["gib"]) * GIB)


def _power_capped(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    if active:
        watts = int(fault.params["watts"])
        state.power_cap_w = watts if state.power_cap_w is None else min(state.power_cap_w, watts)


def _pcie_degraded(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    if active:
        state.pcie = (int(fault.params["gen"]), int(fault.params["width"]))


def _provider_check(state: GpuFaultState, fault: Fault, t: float, active: bool, end: float) -> None:
    # The check runs for ``duration`` at the start of every ``period`` from ``at``.
    if active and (t - fault.at) % float(fault.params["period"]) < float(fault.params["duration"]):
        state.provider_load = True


_GPU_EFFECTS = {
    "xid79": _xid79,
    "ecc_dbe": _ecc_dbe,
    "row_remap_pending": _remap_pending,
    "row_remap_failure": _remap_failure,
    "nvlink_crc_storm": _crc_storm,
    "nvlink_down": _nvlink_down,
    "thermal_slowdown": _thermal,
    "slow_gpu": _slow,
    "memory_reserved": _memory_reserved,
    "power_capped": _power_capped,
    "pcie_degraded": _pcie_degraded,
    "provider_check": _provider_check,
}
_PORT_EFFECTS = {
    "ib_link_down": _link_down,
    "ib_symbol_errors": _symbol_errors,
    "ib_degraded_rate": _degraded,
}
