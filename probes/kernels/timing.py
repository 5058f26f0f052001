"""Timing a kernel on one device: CUDA events on a GPU, thread CPU time on the CPU.

On the CPU (a simulated node, or a node without GPU) the kernels run single-threaded
in the calling thread, so the thread's CPU time is the kernel's time. Wall-clock
time would also count the moments the OS gave the core to someone else: on a
shared machine (CI, 2 cores, eight other test runs) that made healthy simulated
GPUs look slower than a simulated slow one.
"""

import time
from typing import Any, Callable, Dict, List

from .context import ProbeContext, ProbeTimeout
from .devices import ProbeDevice


def timed_seconds(
    torch: Any, device: ProbeDevice, kernel: Callable[[], Any], repeats: int
) -> float:
    """Seconds ``repeats`` calls of ``kernel`` take on ``device``, after one warm-up call.

    A simulated slow GPU runs the kernel ``slow_factor`` times as often; the caller
    still credits ``repeats`` calls' worth of work, so it really measures slower.
    """
    calls = max(1, round(repeats * device.slow_factor))
    if device.is_cuda:
        return _cuda_seconds(torch, device, kernel, calls)
    kernel()  # warm-up: first-call allocation and dispatch costs stay out of the figure
    start = time.thread_time()
    for _ in range(calls):
        kernel()
    return time.thread_time() - start


def _cuda_seconds(torch: Any, device: ProbeDevice, kernel: Callable[[], Any], calls: int) -> float:
    # Inputs were filled on the default stream; our stream must not read them earlier.
    device.stream.wait_stream(torch.cuda.default_stream(device.torch_device))
    with torch.cuda.device(device.torch_device), torch.cuda.stream(device.stream):
        kernel()  # warm-up: cuBLAS heuristics, allocator, clocks ramping up
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record(device.stream)
        for _ in range(calls):
            kernel()
        end.record(device.stream)
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0


def best_rates(
    ctx: ProbeContext,
    probe: str,
    trials: int,
    work: float,
    kernels: Dict[int, Callable[[], Any]],
    repeats: int,
) -> Dict[int, float]:
    """Best rate (``work`` units per second per call) of each device over ``trials`` rounds.

    Trials go round-robin over the devices and the best one counts, so that a burst of
    load on the machine (simulated nodes share the CPU) hits every device alike and a
    trial that was preempted does not decide the figure.

    Raises:
        ProbeTimeout: the deadline passed before any trial finished.
    """
    best: Dict[int, float] = {}
    for trial in range(trials):
        if ctx.deadline.expired():
            break
        for device in ctx.devices:
            seconds = timed_seconds(ctx.torch, device, kernels[device.index], repeats)
            rate = work * repeats / max(seconds, 1e-12)
            best[device.index] = max(best.get(device.index, 0.0), rate)
            ctx.advance(probe, device.index, "trial %d/%d" % (trial + 1, trials))
    if len(best) < len(ctx.devices):
        raise ProbeTimeout(probe + ": time limit reached before every GPU was measured")
    return best


def free_device_memory(torch: Any, devices: List[ProbeDevice]) -> None:
    """Return cached blocks to the driver after a probe (tensors must be dropped first)."""
    for device in devices:
        if device.is_cuda:
            with torch.cuda.device(device.torch_device):
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
