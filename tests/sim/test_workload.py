"""Workloads are realistic and deterministic under a seed."""

from __future__ import annotations

import statistics

import pynvml

from collectors.sim import ManualClock
from collectors.sim.sysfs import render_tree
from collectors.sim.workload import DAY_S, NodeWorkload


def _snapshot(gpus: int = 8) -> list[tuple[object, ...]]:
    rows = []
    for i in range(gpus):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        rows.append(
            (
                pynvml.nvmlDeviceGetUUID(h),
                pynvml.nvmlDeviceGetSerial(h),
                pynvml.nvmlDeviceGetUtilizationRates(h).gpu,
                pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2).used,
                pynvml.nvmlDeviceGetPowerUsage(h),
                pynvml.nvmlDeviceGetTemperatureV(h, 0),
                pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            )
        )
    return rows


def _run(nvml, clock: ManualClock, node: str, seed: int) -> list[list[tuple[object, ...]]]:
    sim_node = nvml(node, seed=seed, clock=clock)
    snapshots = []
    for t in (0, 13.5, 600, 3600, 20_000):
        clock.set(t)
        snapshots.append(_snapshot())
    snapshots.append([tuple(render_tree(seed, sim_node.model.faults, 20_000).items())])
    return snapshots


def test_same_seed_same_node_gives_identical_readings(nvml, clock: ManualClock) -> None:
    first = _run(nvml, clock, "node-004", seed=11)
    second = _run(nvml, ManualClock(), "node-004", seed=11)  # a fresh node, from 0 again
    assert first == second
    assert len({row[0] for row in first[0]}) == 8


def test_seed_and_node_change_the_readings(nvml) -> None:
    base = _run(nvml, ManualClock(), "node-001", seed=1)
    assert _run(nvml, ManualClock(), "node-001", seed=2) != base
    assert _run(nvml, ManualClock(), "node-002", seed=1) != base


def test_jobs_start_and_end_and_power_memory_heat_follow(nvml, clock: ManualClock) -> None:
    nvml("node-002", seed=3)
    busy, idle, transitions, last = [], [], 0, None
    for t in range(0, 4 * 3600, 20):
        clock.set(t)
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        util = pynvml.nvmlDeviceGetUtilizationRates(h).gpu
        row = (
            pynvml.nvmlDeviceGetPowerUsage(h),
            pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2).used,
            pynvml.nvmlDeviceGetTemperatureV(h, 0),
            pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
        )
        running = bool(pynvml.nvmlDeviceGetComputeRunningProcesses(h))
        (busy if running and util > 50 else idle if not running else []).append(row)
        transitions += last is not None and running != last
        last = running
    assert transitions >= 4  # several jobs began and ended
    assert busy and idle
    assert statistics.mean(r[0] for r in busy) > statistics.mean(r[0] for r in idle) + 300_000
    assert min(r[1] for r in busy) > 10 * 2**30 > max(r[1] for r in idle)
    assert statistics.mean(r[2] for r in busy) > statistics.mean(r[2] for r in idle) + 15
    assert {r[3] for r in idle} == {345} and min(r[3] for r in busy) >= 1700


def test_the_fleet_is_busier_by_day_than_by_night() -> None:
    day, night = [], []
    for n in range(1, 9):
        workload = NodeWorkload(5, f"node-{n:03d}", 8)
        peak = max(range(0, int(DAY_S), 600), key=workload.busy_fraction)
        for minute in range(-180, 180):
            day.append(len(workload.segment_at(peak + minute * 60).gpus))
            night.append(len(workload.segment_at(peak + DAY_S / 2 + minute * 60).gpus))
    assert statistics.mean(day) > 1.3 * statistics.mean(night)
