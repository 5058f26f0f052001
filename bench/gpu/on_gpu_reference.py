"""A plain torch reference for the probe figures, on the same GPU in the same run.

Run on a GPU node: ``python3 bench/gpu/on_gpu_reference.py`` (bench/gpu/on_gpu.sh calls it).
Each figure is the median of 20 timed calls after 5 warm-ups, timed with CUDA events,
on random data (zeros run faster on Hopper), rotating four input sets so that L2 does
not serve a repeated operand. A copy counts bytes read plus bytes written, as the hbm
probe and the datasheets do.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

WARMUP, TIMED, SETS = 5, 20, 4


def median_seconds(kernels: list) -> float:
    """Median time of one call, rotating over ``kernels`` (one per input set)."""
    for i in range(WARMUP):
        kernels[i % len(kernels)]()
    times = []
    for i in range(TIMED):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        kernels[i % len(kernels)]()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def gemm_tflops(dtype: torch.dtype, n: int = 8192) -> float:
    """Dense n-by-n matrix product rate."""
    pairs = [
        (
            torch.randn(n, n, device="cuda", dtype=dtype),
            torch.randn(n, n, device="cuda", dtype=dtype),
        )
        for _ in range(SETS)
    ]
    kernels = [lambda a=a, b=b: torch.matmul(a, b) for a, b in pairs]
    return 2 * n**3 / median_seconds(kernels) / 1e12


def copy_gbs(nbytes: int = 1 << 30) -> float:
    """Device-to-device copy rate, bytes read plus written."""
    buffers = [
        (
            torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda"),
            torch.empty(nbytes, dtype=torch.uint8, device="cuda"),
        )
        for _ in range(2)
    ]
    kernels = [lambda s=s, d=d: d.copy_(s) for s, d in buffers]
    return 2 * nbytes / median_seconds(kernels) / 1e9


def burn(seconds: float, n: int = 8192) -> None:
    """Back-to-back bf16 GEMMs for ``seconds``: a busy GPU for the agent to watch."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    print(f"burn start {time.time():.3f}")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(50):
            torch.matmul(a, b)
        torch.cuda.synchronize()
    print(f"burn end {time.time():.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burn", type=float, default=0.0, help="then GEMMs for this many s")
    args = parser.parse_args()
    print("device", torch.cuda.get_device_name(0), "torch", torch.__version__)
    print(f"gemm bf16 TFLOPS {gemm_tflops(torch.bfloat16):.1f}")
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"gemm tf32 TFLOPS {gemm_tflops(torch.float32):.1f}")
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"hbm d2d GB/s {copy_gbs():.1f}")
    if args.burn:
        burn(args.burn)


if __name__ == "__main__":
    main()
