"""Seeded, deterministic workloads: jobs, idle gaps and a diurnal pattern per node.

Each node has one timeline of segments (a job on some of its GPUs, or an idle gap),
generated lazily from a random stream keyed by (seed, node). A GPU's reading at time
``t`` is a pure function of that timeline, the GPU index and ``t``: memory, power,
temperature and clocks follow utilization the way they do on an H100 (power near the
cap under a training job, idle clocks and ~70 W when idle, temperature lagging power).
"""

from __future__ import annotations

import bisect
import math
import random
import threading
from dataclasses import dataclass

from collectors.sim.identity import mix, stream_key

MIB = 1 << 20
MEMORY_TOTAL = 81559 * MIB
MEMORY_RESERVED = 533 * MIB
POWER_LIMIT_MW = 700_000
IDLE_POWER_MW = 70_000
MAX_SM_CLOCK = 1980
IDLE_SM_CLOCK = 345
MEM_CLOCK = 2619
DAY_S = 86_400.0
REASON_IDLE = 0x1
REASON_SW_POWER_CAP = 0x4


@dataclass(frozen=True, slots=True)
class Segment:
    """One stretch of a node's timeline: a job on ``gpus``, or idle when ``gpus`` is empty."""

    start: float
    end: float
    gpus: frozenset[int]
    level: float  # utilization while computing, 0..1
    memory: float  # fraction of memory the job holds
    sm_ratio: float  # SM activity / utilization
    tensor_ratio: float  # tensor activity / utilization
    checkpoint_every: float  # seconds between checkpoint pauses
    pid: int


@dataclass(frozen=True, slots=True)
class GpuReading:
    """What one GPU reports at one instant, before faults are applied."""

    util_gpu: int
    util_mem: int
    sm_active: float
    tensor_active: float
    memory_used: int
    power_mw: int
    temp_c: int
    sm_clock: int
    mem_clock: int
    reasons: int
    pstate: int
    pid: int | None


class NodeWorkload:
    """The job timeline of one simulated node; thread-safe, grows on demand."""

    def __init__(self, seed: int, node: str, gpus: int) -> None:
        self._seed = seed
        self._node = node
        self._gpus = gpus
        self._rng = random.Random(stream_key("jobs", seed, node))
        # The whole fleet shares one day (one seed, one time zone); a run starts within
        # four hours of the daily peak, so a demo opens on a busy cluster.
        self._phase = random.Random(stream_key("day", seed)).uniform(-4, 4) * 3600
        self._lock = threading.Lock()
        first = -self._rng.uniform(0, 900)  # a job is usually already running at t=0
        self._starts: list[float] = []
        self._segments: list[Segment] = []
        self._append_job(first)

    def segment_at(self, t: float) -> Segment:
        """The segment that covers time ``t`` (seconds since the node's start)."""
        with self._lock:
            while self._segments[-1].end <= t:
                self._extend()
            i = bisect.bisect_right(self._starts, t) - 1
            return self._segments[max(i, 0)]

    def busy_fraction(self, t: float) -> float:
        """How busy the diurnal pattern makes the cluster at ``t``, 0.2 (night) .. 1 (day)."""
        day = math.cos(2 * math.pi * (t + self._phase) / DAY_S)
        return 0.6 + 0.4 * day

    def reading(self, gpu: int, t: float, segment: Segment | None = None) -> GpuReading:
        """The fault-free reading of GPU ``gpu`` at time ``t``.

        ``segment`` stands in for the timeline's own (a scheduler job the scenario runs).
        """
        key = stream_key("noise", self._seed, self._node, gpu)
        second = math.floor(t)
        if segment is None:
            segment = self.segment_at(t)
        if gpu not in segment.gpus:
            return _idle_reading(key, second)
        util = self._utilization(segment, key, t)
        power = self._power(key, gpu, t, segment)
        temp = 31 + 44 * (self._lagged_power(gpu, t, segment) - IDLE_POWER_MW) / 630_000
        capped = power >= POWER_LIMIT_MW - 8_000
        return GpuReading(
            util_gpu=util,
            util_mem=min(100, round(util * 0.45 + 4 * mix(key, second, 2))),
            sm_active=round(util * segment.sm_ratio, 1),
            tensor_active=round(util * segment.tensor_ratio, 1),
            memory_used=int(segment.memory * (MEMORY_TOTAL - MEMORY_RESERVED)),
            power_mw=power,
            temp_c=round(temp + 1.5 * mix(key, second, 3)),
            sm_clock=MAX_SM_CLOCK
            - (225 if capped else 0)
            - (15 if mix(key, second, 4) < 0.3 else 0),
            mem_clock=MEM_CLOCK,
            reasons=REASON_SW_POWER_CAP if capped else 0,
            pstate=0,
            pid=segment.pid,
        )

    def _utilization(self, segment: Segment, key: int, t: float) -> int:
        phase = t - segment.start
        second = math.floor(t)
        if phase % segment.checkpoint_every < 15.0:  # checkpoint: GPUs wait on storage
            return round(3 + 6 * mix(key, second, 1))
        wobble = 8 * mix(key, second, 1) - 6
        return max(0, min(100, round(segment.level * 100 + wobble)))

    def _power(self, key: int, gpu: int, t: float, segment: Segment | None = None) -> int:
        if segment is None:
            segment = self.segment_at(t)
        if gpu not in segment.gpus:
            return IDLE_POWER_MW + round(5_000 * mix(key, math.floor(t), 5))
        util = self._utilization(segment, key, t) / 100
        heat = 630_000 * util**1.3 * (0.8 + 0.3 * segment.tensor_ratio)
        noise = 15_000 * mix(key, math.floor(t), 5)
        return min(POWER_LIMIT_MW, round(IDLE_POWER_MW + heat + noise))

    def _lagged_power(self, gpu: int, t: float, fixed: Segment | None = None) -> float:
        # Heat sinks lag: temperature follows the last half minute of power, not the instant.
        key = stream_key("noise", self._seed, self._node, gpu)
        return sum(self._power(key, gpu, t - lag, fixed) for lag in (0, 10, 20, 30)) / 4

    def _extend(self) -> None:
        last = self._segments[-1]
        if last.gpus:
            # Nights are quieter: idle gaps grow up to ~6x as the diurnal load falls.
            quiet = 1.0 - self.busy_fraction(last.end)
            gap = self._rng.uniform(15, 180) * (1 + 8 * quiet**2)
            self._append(Segment(last.end, last.end + gap, frozenset(), 0, 0, 0, 0, 1e9, 0))
        else:
            self._append_job(last.end)

    def _append_job(self, start: float) -> None:
        rng = self._rng
        if rng.random() < 0.35 + 0.45 * self.busy_fraction(start):
            gpus = frozenset(range(self._gpus))
        else:
            size = min(self._gpus, rng.choice((1, 2, 4)))
            first = rng.randrange(0, self._gpus - size + 1)
            gpus = frozenset(range(first, first + size))
        training = rng.random() < 0.75
        self._append(
            Segment(
                start=start,
                end=start + rng.uniform(240, 2400),
                gpus=gpus,
                level=rng.uniform(0.86, 0.99) if training else rng.uniform(0.3, 0.7),
                memory=rng.uniform(0.55, 0.97) if training else rng.uniform(0.2, 0.5),
                sm_ratio=rng.uniform(0.6, 0.85),
                tensor_ratio=rng.uniform(0.35, 0.7) if training else rng.uniform(0.1, 0.3),
                checkpoint_every=rng.uniform(300, 900),
                pid=rng.randrange(10_000, 4_000_000),
            )
        )

    def _append(self, segment: Segment) -> None:
        self._starts.append(segment.start)
        self._segments.append(segment)


def _idle_reading(key: int, second: int) -> GpuReading:
    return GpuReading(
        util_gpu=0,
        util_mem=0,
        sm_active=0.0,
        tensor_active=0.0,
        memory_used=round((450 + 60 * mix(key, second, 6)) * MIB),
        power_mw=IDLE_POWER_MW + round(5_000 * mix(key, second, 5)),
        temp_c=31 + round(3 * mix(key, second, 3)),
        sm_clock=IDLE_SM_CLOCK,
        mem_clock=MEM_CLOCK,
        reasons=REASON_IDLE,
        pstate=0,
        pid=None,
    )
