"""One simulated node's GPUs: workload readings with fault effects applied."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from collectors.sim.effects import CLOCK_HW_SLOWDOWN, CLOCK_HW_THERMAL, GpuFaultState, NodeFaults
from collectors.sim.identity import GpuIdentity, gpu_identity
from collectors.sim.jobs import SimJob, job_segment
from collectors.sim.scenario import Scenario
from collectors.sim.workload import (
    MEMORY_RESERVED,
    MEMORY_TOTAL,
    GpuReading,
    NodeWorkload,
    Segment,
)

TICKS_PER_S = 100


@dataclass(frozen=True, slots=True)
class GpuView:
    """Everything the fake library needs about one GPU at one instant."""

    index: int  # physical index on the board
    identity: GpuIdentity
    reading: GpuReading
    faults: GpuFaultState


class NodeModel:
    """The GPUs of one simulated node as functions of elapsed time."""

    def __init__(self, node: str, scenario: Scenario, seed: int, gpus: int) -> None:
        self.node = node
        self.seed = seed
        self.gpus = gpus
        self.workload = NodeWorkload(seed, node, gpus)
        self.faults = NodeFaults(scenario, node, gpus)
        self._views: dict[int, tuple[int, GpuView]] = {}
        self._energy: dict[int, tuple[int, int]] = {}  # gpu -> (whole seconds summed, mJ)

    def visible(self, t: float) -> list[int]:
        """Physical indices NVML enumerates at ``t`` (a missing GPU is skipped)."""
        missing = self.faults.missing_gpus(t)
        return [i for i in range(self.gpus) if i not in missing]

    def view(self, gpu: int, t: float) -> GpuView:
        """The state of physical GPU ``gpu`` at ``t``, on a 10 ms grid.

        The agent makes ~10 calls per GPU per sample within a millisecond or two; one
        view per GPU per 10 ms serves them all (the model's own noise is per second).
        """
        tick = math.floor(t * TICKS_PER_S + 1e-6)
        cached = self._views.get(gpu)
        if cached is not None and cached[0] == tick:
            return cached[1]
        view = self._compute(gpu, tick / TICKS_PER_S)
        self._views[gpu] = (tick, view)
        return view

    def energy_mj(self, gpu: int, t: float) -> int:
        """NVML's total energy counter at ``t``: the model's power summed second by second
        since the node started (a whole second at that second's draw), in millijoules."""
        done, total = self._energy.get(gpu, (0, 0))
        whole = max(0, math.floor(t))
        for second in range(done, whole):
            total += self._compute(gpu, float(second)).reading.power_mw  # mW x 1 s = mJ
        self._energy[gpu] = (max(done, whole), total)
        part = t - whole
        return total + (
            round(self._compute(gpu, float(whole)).reading.power_mw * part) if part > 0 else 0
        )

    def _compute(self, gpu: int, t: float) -> GpuView:
        faults = self.faults.gpu_state(gpu, t)
        reading = _with_faults(self._workload_reading(gpu, t, faults.job), faults)
        identity = gpu_identity(self.seed, self.node, gpu, faults.generation)
        return GpuView(gpu, identity, reading, faults)

    def _workload_reading(self, gpu: int, t: float, job: SimJob | None) -> GpuReading:
        """The workload's reading, or the scheduler job's while one holds the GPU: an idle
        job leaves it idle, a busy one trains; its process is listed by ``job_pids``."""
        if job is None:
            return self.workload.reading(gpu, t)
        idle = Segment(job.start, math.inf, frozenset(), 0, 0, 0, 0, 1e9, 0)
        segment = idle if job.idle else job_segment(job)
        return dataclasses.replace(self.workload.reading(gpu, t, segment), pid=None)


def _with_faults(reading: GpuReading, faults: GpuFaultState) -> GpuReading:
    reading = _with_provider(reading, faults)
    if faults.thermal is not None:
        temp, factor = faults.thermal
        reading = dataclasses.replace(
            reading,
            temp_c=max(reading.temp_c, temp),
            sm_clock=round(reading.sm_clock * factor),
            reasons=reading.reasons | CLOCK_HW_THERMAL | CLOCK_HW_SLOWDOWN,
            power_mw=round(reading.power_mw * (0.4 + 0.6 * factor)),
        )
    if faults.slow_factor > 1 and reading.util_gpu > 0:
        # A slow GPU still looks busy; it draws a little less because it does less work.
        reading = dataclasses.replace(reading, power_mw=round(reading.power_mw * 0.85))
    return reading


# The provider's check is a full load (a GEMM burn-in); its process holds this much.
CHECK_MEMORY = 4 << 30
CHECK_POWER_MW = 650_000


def _with_provider(reading: GpuReading, faults: GpuFaultState) -> GpuReading:
    """Provider processes' memory and load, then the power cap over everything."""
    memory = reading.memory_used + faults.reserved_bytes
    if faults.provider_load:
        reading = dataclasses.replace(
            reading,
            util_gpu=100,
            util_mem=max(reading.util_mem, 60),
            sm_active=max(reading.sm_active, 95.0),
            power_mw=max(reading.power_mw, CHECK_POWER_MW),
        )
        memory += CHECK_MEMORY
    reading = dataclasses.replace(reading, memory_used=min(memory, MEMORY_TOTAL - MEMORY_RESERVED))
    if faults.power_cap_w is not None:
        # The cap holds the draw just under it, as the driver's power capping does.
        cap_mw = faults.power_cap_w * 1000
        reading = dataclasses.replace(reading, power_mw=min(reading.power_mw, cap_mw - 2_000))
    return reading
