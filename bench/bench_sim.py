"""Cost of the simulated NVML node, against a constant stub library and a disk-backed tree.

Run: ``.venv/bin/python bench/bench_sim.py [--repeat 2000]``

Measured in the same process:

* ``call``: one ``pynvml.nvmlDeviceGetUtilizationRates`` through the simulator, against
  the same pynvml wrapper over a stub library that answers constants (the
  gpustat ``NvidiaDriverMock`` approach): the price of a realistic, time-driven model.
  ``call`` reuses the GPU's view (as the calls of one sample do); ``cold`` moves
  simulated time 10 ms before each call, so the view is recomputed every time.
* ``sample``: what the agent reads per 1 Hz tick for 8 GPUs (utilization, memory v2,
  power, temperature, SM clock, clock reasons, pstate, and one batched field-value
  read of 6 ids), simulator vs stub.
* ``sysfs``: one ticker refresh of the fake sysfs tree (8 HCAs + 1 NIC, only changed
  files rewritten atomically) in ``/dev/shm`` (the default) against a disk-backed
  temp dir.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pynvml

from collectors import sim
from collectors.sim.cbase import out, set_pointer
from collectors.sim.node import memory_tempdir


class StubLibrary:
    """Baseline: answers the same symbols with constants, no model behind them."""

    def nvmlInitWithFlags(self, flags: Any) -> int:
        return 0

    def nvmlShutdown(self) -> int:
        return 0

    def nvmlDeviceGetCount_v2(self, ref: Any) -> int:
        out(ref).value = 8
        return 0

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, ref: Any) -> int:
        set_pointer(out(ref), 0x1000 + index.value)
        return 0

    def nvmlDeviceGetUtilizationRates(self, handle: Any, ref: Any) -> int:
        out(ref).gpu, out(ref).memory = 97, 40
        return 0

    def nvmlDeviceGetMemoryInfo_v2(self, handle: Any, ref: Any) -> int:
        out(ref).total, out(ref).used, out(ref).free = 80 << 30, 60 << 30, 20 << 30
        return 0

    def _scalar(self, *args: Any) -> int:
        out(args[-1]).value = 1
        return 0

    nvmlDeviceGetPowerUsage = nvmlDeviceGetClockInfo = nvmlDeviceGetPerformanceState = _scalar
    nvmlDeviceGetCurrentClocksEventReasons = _scalar

    def nvmlDeviceGetTemperatureV(self, handle: Any, ref: Any) -> int:
        out(ref).temperature = 60
        return 0

    def nvmlDeviceGetFieldValues(self, handle: Any, count: Any, ref: Any) -> int:
        for i in range(count.value):
            out(ref)[i].nvmlReturn, out(ref)[i].value.ullVal = 0, 0
        return 0


def use(library: object) -> None:
    with pynvml.libLoadLock:
        pynvml.nvmlLib = library
        pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml.nvmlInit()


def per_op_us(fn: Callable[[], object], repeat: int, rounds: int = 5) -> float:
    """Median over ``rounds`` of the mean microseconds per call."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        times.append((time.perf_counter() - start) / repeat * 1e6)
    return statistics.median(times)


def agent_sample(handles: list[Any]) -> None:
    fields = [4, 6, 144, 145, 230, 185]
    for h in handles:
        pynvml.nvmlDeviceGetUtilizationRates(h)
        pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        pynvml.nvmlDeviceGetPowerUsage(h)
        pynvml.nvmlDeviceGetTemperatureV(h, pynvml.NVML_TEMPERATURE_GPU)
        pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
        pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)
        pynvml.nvmlDeviceGetPerformanceState(h)
        pynvml.nvmlDeviceGetFieldValues(h, fields)


def measure_nvml(library: object, repeat: int) -> tuple[float, float]:
    use(library)
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(8)]
    call = per_op_us(lambda: pynvml.nvmlDeviceGetUtilizationRates(handles[0]), repeat)
    sample = per_op_us(lambda: agent_sample(handles), max(1, repeat // 50))
    pynvml.nvmlShutdown()
    return call, sample


def cold_call_us(scenario: sim.Scenario, repeat: int) -> float:
    """One call when the GPU's view must be recomputed (simulated time moved 10 ms)."""
    clock = sim.ManualClock()
    node = sim.install("node-003", scenario, clock=clock, refresh_s=None)
    use(node.library)
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)

    def call() -> None:
        clock.advance(0.01)
        pynvml.nvmlDeviceGetUtilizationRates(handle)

    cost = per_op_us(call, repeat)
    pynvml.nvmlShutdown()
    node.close()
    return cost


def measure_sysfs(base: Path, ticks: int) -> float:
    clock = sim.ManualClock()
    node = sim.install("node-001", None, clock=clock, refresh_s=None, sysfs_root=base / "tree")
    start = time.perf_counter()
    for _ in range(ticks):
        clock.advance(0.25)
        node.tick()
    elapsed = (time.perf_counter() - start) / ticks * 1e3
    node.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000, help="calls per timing round")
    args = parser.parse_args()

    scenario = sim.load_scenario(sim.default_scenario_path())
    node = sim.install("node-003", scenario, refresh_s=None)
    sim_call, sim_sample = measure_nvml(node.library, args.repeat)
    node.close()
    stub_call, stub_sample = measure_nvml(StubLibrary(), args.repeat)
    ratio = sim_call / stub_call
    print(f"call   sim {sim_call:8.1f} us  stub {stub_call:8.1f} us  ratio {ratio:.1f}x")
    cold = cold_call_us(scenario, args.repeat)
    print(f"cold   sim {cold:8.1f} us  stub {stub_call:8.1f} us  ratio {cold / stub_call:.1f}x")
    print(
        f"sample sim {sim_sample / 1e3:8.2f} ms  stub {stub_sample / 1e3:8.2f} ms  "
        f"ratio {sim_sample / stub_sample:.1f}x  (8 GPUs, 8 calls each)"
    )

    shm, disk = memory_tempdir("bench-sim-"), Path(tempfile.mkdtemp(prefix="bench-sim-"))
    try:
        in_ram, on_disk = measure_sysfs(shm, 40), measure_sysfs(disk, 40)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(disk, ignore_errors=True)
    print(
        f"sysfs  {shm.parent}: {in_ram:6.2f} ms/tick  {disk.parent}: {on_disk:6.2f} ms/tick  "
        f"ratio {on_disk / in_ram:.1f}x"
    )


if __name__ == "__main__":
    main()
