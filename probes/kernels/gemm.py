"""``gemm``: dense matrix-multiply throughput per GPU, in TFLOPS.

On a GPU: bf16 and tf32 (float32 inputs with TF32 tensor cores allowed), n=8192.
On the CPU (no GPU, or a simulated node): bf16 and fp32, tiny sizes; those figures
only make sense relative to each other (stragglers), never against a datasheet.
"""

from typing import Any, Callable, Dict, List, Tuple

from .context import ProbeContext
from .timing import best_rates, free_device_memory

PROBE = "gemm"
GPU_SIZE, GPU_REPEATS, GPU_TRIALS = 8192, 10, 3
CPU_SIZE, CPU_REPEATS, CPU_TRIALS = 192, 4, 5


def metrics(ctx: ProbeContext) -> List[Tuple[str, Any]]:
    """(metric name, torch dtype) pairs measured on this node's devices."""
    torch = ctx.torch
    if ctx.on_gpu:
        return [("bf16", torch.bfloat16), ("tf32", torch.float32)]
    return [("bf16", torch.bfloat16), ("fp32", torch.float32)]


def planned_steps(ctx: ProbeContext) -> int:
    """Progress steps this probe will report."""
    trials = GPU_TRIALS if ctx.on_gpu else CPU_TRIALS
    return len(metrics(ctx)) * trials * len(ctx.devices)


def run(ctx: ProbeContext) -> None:
    """Measure and report every metric on every device."""
    for metric, dtype in metrics(ctx):
        _measure(ctx, metric, dtype)


def _measure(ctx: ProbeContext, metric: str, dtype: Any) -> None:
    torch = ctx.torch
    n = _shape(ctx)[0]
    previous_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = metric == "tf32"
    try:
        rates = _rates(ctx, dtype)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous_tf32
        free_device_memory(torch, ctx.devices)  # the operands died with _rates' frame
    for device in ctx.devices:
        ctx.emit.result(
            PROBE,
            metric,
            device.index,
            rates[device.index] / 1e12,
            "TFLOPS",
            n=n,
            dtype=str(dtype).replace("torch.", ""),
            name=device.name,
        )


def _rates(ctx: ProbeContext, dtype: Any) -> Dict[int, float]:
    n, repeats, trials = _shape(ctx)
    kernels = {d.index: _matmul(ctx.torch, d.torch_device, n, dtype) for d in ctx.devices}
    return best_rates(ctx, PROBE, trials, 2.0 * n**3, kernels, repeats)


def _shape(ctx: ProbeContext) -> Tuple[int, int, int]:
    if ctx.on_gpu:
        return GPU_SIZE, GPU_REPEATS, GPU_TRIALS
    return CPU_SIZE, CPU_REPEATS, CPU_TRIALS


def _matmul(torch: Any, device: Any, n: int, dtype: Any) -> Callable[[], Any]:
    gen = torch.Generator(device=device).manual_seed(1234)
    a = torch.randn(n, n, generator=gen, device=device, dtype=torch.float32).to(dtype)
    b = torch.randn(n, n, generator=gen, device=device, dtype=torch.float32).to(dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)

    def kernel() -> Any:
        return torch.matmul(a, b, out=out)

    return kernel
