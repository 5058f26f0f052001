"""Node agent: CPU per sample and bytes per GPU-sample, against a naive poller, same run.

Run: ``.venv/bin/python bench/bench_agent.py [--ticks 300] [--slow-every 10]``

Both samplers read the same simulated node in this process: 8 GPUs (18 NVLinks
each), 8 InfiniBand ports and 1 NIC. The sim's sysfs tree sits on tmpfs and is
rewritten between ticks outside the timed region (on a node, the kernel keeps sysfs).

* ``agent``: :class:`collectors.agent.sampler.NodeSampler` plus the wire encoding:
  NVML initialised once, handles cached, slow fields batched with
  ``nvmlDeviceGetFieldValues`` every ``--slow-every`` ticks, arrays on the wire.
* ``naive``: a gpustat-style poll: ``nvmlInit``/``nvmlShutdown`` and a handle lookup
  per poll, one classic call per field including the process list, the same slow
  fields on the same cadence through per-link calls, one JSON dict per GPU.

The fake library's own cost is inside both figures: each NVML call runs Python in
the simulator instead of C in the driver. A second pass wraps the library to time
the fake calls alone and subtracts them (the wrapper's own overhead, well under a
microsecond a call, stays in), giving the samplers' own CPU per tick.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pynvml

from collectors import sim
from collectors.agent.fields import GPU_FIELDS
from collectors.agent.gpus import open_gpus
from collectors.agent.sampler import NodeSampler
from collectors.agent.sysfs import AttributeReader, discover_nics, discover_ports
from collectors.agent.wire import _encoder

WALL = 1_800_000_000.0


class TimedLibrary:
    """The simulated library, counting calls and timing the time spent inside them."""

    def __init__(self, library: Any) -> None:
        self.library = library
        self.calls: Counter[str] = Counter()
        self.seconds = 0.0

    def total(self) -> int:
        """NVML calls so far."""
        return sum(self.calls.values())

    def __getattr__(self, name: str) -> Callable[..., Any]:
        target = getattr(self.library, name)

        def call(*args: Any) -> Any:
            start = time.thread_time()
            try:
                return target(*args)
            finally:
                self.seconds += time.thread_time() - start
                self.calls[name] += 1

        return call


def set_library(library: Any) -> None:
    with pynvml.libLoadLock:
        pynvml.nvmlLib = library
        pynvml._nvmlGetFunctionPointer_cache.clear()


class Bench:
    """One simulated node, its clock, and the two samplers."""

    def __init__(self, root: Path) -> None:
        self.t = 0.0
        self.node = sim.install("node-001", sysfs_root=root, clock=lambda: self.t, refresh_s=None)
        pynvml.nvmlInit()
        self.root = str(root)
        # As on a node's mounted /sys: attribute files stay open and are pread.
        self.reader = AttributeReader(keep_open=True)
        ports, nics = discover_ports(self.root, self.reader), discover_nics(self.root, self.reader)
        self.sampler = NodeSampler(open_gpus(), ports, nics)
        # The same GPUs without ports: the GPU-only comparison.
        self.gpu_sampler = NodeSampler(self.sampler.gpus, [], [])
        # The same ports opened per read, as the agent does on a plain tree.
        plain = AttributeReader(keep_open=False)
        self.plain = discover_ports(self.root, plain) + discover_nics(self.root, plain)
        self.gpus = len(self.sampler.gpus)
        self.links = self.sampler.gpus[0].slow.links

    def advance(self) -> None:
        self.t += 1.0
        self.node.tick()

    def agent_tick(self, seq: int, slow: bool) -> str:
        message = self.sampler.sample(WALL + self.t, seq, slow)
        return _encoder.encode(message) + "\n"

    def agent_gpu_tick(self, seq: int, slow: bool) -> str:
        return _encoder.encode(self.gpu_sampler.sample(WALL + self.t, seq, slow)) + "\n"

    def naive_tick(self, seq: int, slow: bool, ports: bool = True) -> str:
        pynvml.nvmlInit()
        rows = [naive_gpu(index, slow, self.links) for index in range(self.gpus)]
        pynvml.nvmlShutdown()
        doc: dict[str, Any] = {"t": WALL + self.t, "seq": seq, "gpus": rows}
        if ports:
            doc["ports"] = naive_ports(self.root)
        return json.dumps(doc) + "\n"

    def naive_gpu_tick(self, seq: int, slow: bool) -> str:
        return self.naive_tick(seq, slow, ports=False)

    def plain_ports_tick(self, seq: int, slow: bool) -> str:
        return _encoder.encode([port.read() for port in self.plain])

    def open_ports_tick(self, seq: int, slow: bool) -> str:
        return _encoder.encode([p.read() for p in self.sampler.ports + self.sampler.nics])  # type: ignore[operator]


def naive_ports(root: str) -> dict[str, dict[str, Any]]:
    """Every port and NIC as a dict of file name -> content, listed and opened per tick."""
    out: dict[str, dict[str, Any]] = {}
    ib = Path(root, "class", "infiniband")
    for port in sorted(ib.glob("*/ports/*")):
        values: dict[str, Any] = {n: (port / n).read_text().strip() for n in ("state", "rate")}
        for counter in sorted((port / "counters").iterdir()):
            values[counter.name] = int(counter.read_text())
        out[f"{port.parent.parent.name}/{port.name}"] = values
    for nic in sorted(Path(root, "class", "net").iterdir()):
        stats = {f.name: int(f.read_text()) for f in sorted((nic / "statistics").iterdir())}
        out[nic.name] = {"operstate": (nic / "operstate").read_text().strip(), **stats}
    return out


def naive_gpu(index: int, slow: bool, links: int) -> dict[str, Any]:
    """One GPU as a naive poller reads and sends it."""
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    util = pynvml.nvmlDeviceGetUtilizationRates(h)
    row: dict[str, Any] = {
        "index": index,
        "uuid": pynvml.nvmlDeviceGetUUID(h),
        "util_gpu": util.gpu,
        "util_mem": util.memory,
        "mem_used_mib": pynvml.nvmlDeviceGetMemoryInfo(h).used // (1 << 20),
        "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
        "temp_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
        "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
        "clock_reasons": pynvml.nvmlDeviceGetCurrentClocksEventReasons(h),
        "pstate": pynvml.nvmlDeviceGetPerformanceState(h),
        "processes": [
            {"pid": p.pid, "used_mib": (p.usedGpuMemory or 0) // (1 << 20)}
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)
        ],
    }
    if slow:
        row.update(naive_slow(h, links))
    return row


def naive_slow(h: Any, links: int) -> dict[str, Any]:
    ecc = pynvml.nvmlDeviceGetTotalEccErrors
    remap = pynvml.nvmlDeviceGetRemappedRows(h)
    per_link = [
        [pynvml.nvmlDeviceGetNvLinkState(h, link)]
        + [pynvml.nvmlDeviceGetNvLinkErrorCounter(h, link, c) for c in range(4)]
        for link in range(links)
    ]
    return {
        "ecc_corr_vol": ecc(h, 0, 0),
        "ecc_unc_vol": ecc(h, 1, 0),
        "ecc_corr_agg": ecc(h, 0, 1),
        "ecc_unc_agg": ecc(h, 1, 1),
        "retired_sbe": len(pynvml.nvmlDeviceGetRetiredPages(h, 0)),
        "retired_dbe": len(pynvml.nvmlDeviceGetRetiredPages(h, 1)),
        "retired_pending": pynvml.nvmlDeviceGetRetiredPagesPendingStatus(h),
        "remap": list(remap),
        "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0,
        "nvlinks": per_link,
    }


class Tally:
    """One sampler's totals: CPU, time inside the fake library, NVML calls, lines."""

    def __init__(self, tick: Callable[[int, bool], str]) -> None:
        self.tick = tick
        self.cpu = self.fake = 0.0
        self.calls = 0
        self.lines: list[str] = []

    def run(self, library: TimedLibrary, seq: int, slow: bool) -> None:
        fake, calls = library.seconds, library.total()
        start = time.thread_time()
        self.lines.append(self.tick(seq, slow))
        self.cpu += time.thread_time() - start
        self.fake += library.seconds - fake
        self.calls += library.total() - calls


def measure(bench: Bench, ticks: int, every: int) -> list[Tally]:
    """Both samplers on the same simulated instants, taking turns at going first.

    The simulator computes a GPU's state on the first call after its clock moves;
    alternating the order shares that cost fairly (and it is subtracted anyway).
    """
    library = TimedLibrary(bench.node.library)
    set_library(library)
    ticks_of = [bench.agent_tick, bench.naive_tick, bench.agent_gpu_tick, bench.naive_gpu_tick]
    tallies = [Tally(tick) for tick in ticks_of]
    for seq in range(ticks):
        bench.advance()
        slow = seq % every == 0
        for tally in tallies if seq % 2 == 0 else tallies[::-1]:
            tally.run(library, seq, slow)
    return tallies


def port_reads(bench: Bench, ticks: int) -> tuple[float, float]:
    """CPU per tick reading every port and NIC: kept open (pread) vs. opened per read."""
    kept, plain = Tally(bench.open_ports_tick), Tally(bench.plain_ports_tick)
    library = TimedLibrary(bench.node.library)
    for seq in range(ticks):
        kept.run(library, seq, False)
        plain.run(library, seq, False)
    return kept.cpu / ticks, plain.cpu / ticks


def gpu_entry_bytes(lines: list[str]) -> tuple[float, float]:
    """Mean bytes of one GPU's fast values: our array vs. a dict of the same values."""
    ours, naive = [], []
    for line in lines:
        for index, row in enumerate(json.loads(line)["gpus"]):
            ours.append(len(_encoder.encode(row)))
            named = dict(zip(GPU_FIELDS, row, strict=True))
            naive.append(len(json.dumps({"index": index, **named})))
    return statistics.mean(ours), statistics.mean(naive)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--slow-every", type=int, default=10)
    args = parser.parse_args()
    shm = Path("/dev/shm")
    # tmpfs keeps the simulator's per-tick sysfs rewrite cheap; any temp dir works.
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="bench-agent-", dir=base))
    try:
        report(Bench(root), args.ticks, args.slow_every)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def line(name: str, cpu: float, fake: float, calls_per_gpu: float) -> None:
    """One sampler's figures, in microseconds per tick."""
    print(
        f"{name:15} CPU/tick {cpu * 1e6:7.0f} us (fake NVML {fake * 1e6:6.0f} us, "
        f"own {(cpu - fake) * 1e6:6.0f} us)"
        + (f"  NVML calls/GPU/tick {calls_per_gpu:5.1f}" if calls_per_gpu else "")
    )


def report(bench: Bench, ticks: int, every: int) -> None:
    agent, naive, agent_gpu, naive_gpu = measure(bench, ticks, every)
    ours_entry, naive_entry = gpu_entry_bytes(agent.lines)
    gpus, ports, nics = bench.gpus, len(bench.sampler.ports), len(bench.sampler.nics)
    print(f"node: {gpus} GPUs x {bench.links} NVLinks, {ports} IB ports, {nics} NIC; "
          f"{ticks} ticks, slow every {every}")  # fmt: skip
    line("agent", agent.cpu / ticks, agent.fake / ticks, agent.calls / ticks / gpus)
    line("naive", naive.cpu / ticks, naive.fake / ticks, naive.calls / ticks / gpus)
    own = (naive.cpu - naive.fake) / (agent.cpu - agent.fake)
    print(f"CPU ratio naive/agent: {naive.cpu / agent.cpu:.1f}x total, "
          f"{own:.1f}x without the fake library")  # fmt: skip
    line("agent GPUs only", agent_gpu.cpu / ticks, agent_gpu.fake / ticks, 0)
    line("naive GPUs only", naive_gpu.cpu / ticks, naive_gpu.fake / ticks, 0)
    own_gpu = (naive_gpu.cpu - naive_gpu.fake) / (agent_gpu.cpu - agent_gpu.fake)
    print(f"GPUs-only CPU ratio naive/agent: {naive_gpu.cpu / agent_gpu.cpu:.1f}x total, "
          f"{own_gpu:.1f}x without the fake library")  # fmt: skip
    print(f"NVML calls ratio naive/agent: {naive.calls / agent.calls:.1f}x")
    print(f"GPU entry: agent {ours_entry:.1f} B, naive dict {naive_entry:.1f} B, "
          f"ratio {naive_entry / ours_entry:.1f}x")  # fmt: skip
    agent_bytes = statistics.mean(len(x) for x in agent.lines)
    naive_bytes = statistics.mean(len(x) for x in naive.lines)
    print(f"whole line/tick: agent {agent_bytes:.0f} B, naive {naive_bytes:.0f} B "
          f"(both with {ports} ports + {nics} NIC)")  # fmt: skip
    kept, plain = port_reads(bench, ticks)
    print(f"ports+NIC read/tick: kept open {kept * 1e6:.0f} us, opened per read "
          f"{plain * 1e6:.0f} us, ratio {plain / kept:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
