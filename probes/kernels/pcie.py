"""``pcie``: pinned host-to-device and device-to-host copy bandwidth per GPU, in GB/s.

On a GPU the host buffer is pinned (page-locked), so the copy is a DMA over the
PCIe link and the figure reflects the link's generation and width. Without a GPU
there is no link: a host-to-host memcpy of the same size stands in, and every
result says so (``stand_in``); its figure is only comparable between CPU runs.
"""

from typing import Any, Callable, Dict, Tuple

from .context import ProbeContext
from .timing import best_rates, free_device_memory

PROBE = "pcie"
GPU_BYTES, GPU_REPEATS, GPU_TRIALS = 256 << 20, 10, 3
CPU_BYTES, CPU_REPEATS, CPU_TRIALS = 4 << 20, 10, 5
STAND_IN = "host memcpy stand-in (no GPU)"
DIRECTIONS = ("h2d", "d2h")


def planned_steps(ctx: ProbeContext) -> int:
    """Progress steps this probe will report."""
    return len(DIRECTIONS) * _shape(ctx)[2] * len(ctx.devices)


def run(ctx: ProbeContext) -> None:
    """Measure and report both directions for every device."""
    for direction in DIRECTIONS:
        try:
            rates = _rates(ctx, direction)
        finally:
            free_device_memory(ctx.torch, ctx.devices)
        extra = {} if ctx.on_gpu else {"stand_in": STAND_IN}
        for device in ctx.devices:
            ctx.emit.result(
                PROBE,
                direction,
                device.index,
                rates[device.index] / 1e9,
                "GB/s",
                bytes=_shape(ctx)[0],
                name=device.name,
                **extra,
            )


def _rates(ctx: ProbeContext, direction: str) -> Dict[int, float]:
    nbytes, repeats, trials = _shape(ctx)
    kernels = {
        d.index: _transfer(ctx.torch, d.torch_device, nbytes, direction, ctx.on_gpu)
        for d in ctx.devices
    }
    return best_rates(ctx, PROBE, trials, float(nbytes), kernels, repeats)


def _shape(ctx: ProbeContext) -> Tuple[int, int, int]:
    if ctx.on_gpu:
        return GPU_BYTES, GPU_REPEATS, GPU_TRIALS
    return CPU_BYTES, CPU_REPEATS, CPU_TRIALS


def _transfer(
    torch: Any, device: Any, nbytes: int, direction: str, on_gpu: bool
) -> Callable[[], Any]:
    host = torch.ones(nbytes, dtype=torch.uint8, pin_memory=on_gpu)
    on_device = torch.empty(nbytes, dtype=torch.uint8, device=device)
    src, dst = (host, on_device) if direction == "h2d" else (on_device, host)

    def kernel() -> Any:
        # non_blocking only overlaps with the host when the host side is pinned.
        return dst.copy_(src, non_blocking=on_gpu)

    return kernel
