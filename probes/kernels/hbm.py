"""``hbm``: device-to-device copy bandwidth per GPU, in GB/s (bytes read + written).

A copy of N bytes reads N and writes N bytes of device memory, so the figure counts
2N per copy: the convention that matches the datasheet's memory bandwidth.
On the CPU the same copy measures host memory bandwidth of tiny buffers.
"""

from typing import Any, Callable, Dict, Tuple

from .context import ProbeContext
from .timing import best_rates, free_device_memory

PROBE = "hbm"
GPU_BYTES, GPU_REPEATS, GPU_TRIALS = 1 << 30, 20, 3
CPU_BYTES, CPU_REPEATS, CPU_TRIALS = 4 << 20, 10, 5


def planned_steps(ctx: ProbeContext) -> int:
    """Progress steps this probe will report."""
    return _shape(ctx)[2] * len(ctx.devices)


def run(ctx: ProbeContext) -> None:
    """Measure and report the copy bandwidth of every device."""
    nbytes = _shape(ctx)[0]
    try:
        rates = _rates(ctx)
    finally:
        free_device_memory(ctx.torch, ctx.devices)
    for device in ctx.devices:
        ctx.emit.result(
            PROBE,
            "d2d",
            device.index,
            rates[device.index] / 1e9,
            "GB/s",
            bytes=nbytes,
            name=device.name,
        )


def _rates(ctx: ProbeContext) -> Dict[int, float]:
    nbytes, repeats, trials = _shape(ctx)
    kernels = {d.index: _copy(ctx.torch, d.torch_device, nbytes) for d in ctx.devices}
    return best_rates(ctx, PROBE, trials, 2.0 * nbytes, kernels, repeats)


def _shape(ctx: ProbeContext) -> Tuple[int, int, int]:
    if ctx.on_gpu:
        return GPU_BYTES, GPU_REPEATS, GPU_TRIALS
    return CPU_BYTES, CPU_REPEATS, CPU_TRIALS


def _copy(torch: Any, device: Any, nbytes: int) -> Callable[[], Any]:
    src = torch.ones(nbytes // 4, device=device, dtype=torch.float32)
    dst = torch.empty_like(src)

    def kernel() -> Any:
        return dst.copy_(src)

    return kernel
