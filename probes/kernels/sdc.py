"""``sdc``: silent data corruption. The same seeded GEMM on every GPU, checked twice.

Every GPU multiplies the same seeded float32 matrices (TF32 off, so the result is
plain float32 arithmetic). Each result is compared with a reference computed
another way (float64 on the CPU) and with the other GPUs' results. A GPU whose
error relative to the reference's largest magnitude exceeds the float32 tolerance,
or whose result is not finite, fails. A simulated ``sdc`` GPU flips one mantissa
bit of its largest output element, a corruption of about 6 % or more of that value:
far beyond the tolerance, yet a plausible number, as real silent corruption is.
"""

from typing import Any, Dict, List, Tuple

from .context import ProbeContext, ProbeTimeout
from .devices import ProbeDevice
from .timing import free_device_memory

PROBE = "sdc"
SEED = 20240611
GPU_SIZE, CPU_SIZE = 2048, 96
ROUNDS = 2
# Relative to max |reference|. float32 accumulation over n terms errs ~sqrt(n)*6e-8.
TOLERANCE = 1e-4
FLIPPED_BIT = 20  # a float32 mantissa bit: flips change the value by 2**-3 of its exponent


def planned_steps(ctx: ProbeContext) -> int:
    """Progress steps this probe will report."""
    return ROUNDS * len(ctx.devices)


def run(ctx: ProbeContext) -> None:
    """Compute, compare and report one verdict per device."""
    torch = ctx.torch
    n = GPU_SIZE if ctx.on_gpu else CPU_SIZE
    a, b = _inputs(torch, n)
    reference = a @ b  # float64 on the CPU: the "other way"
    errors: Dict[int, float] = {}
    outputs: Dict[int, Any] = {}
    for round_no in range(ROUNDS):
        if ctx.deadline.expired() and round_no > 0:
            break
        for device in ctx.devices:
            if ctx.deadline.expired() and round_no == 0:
                raise ProbeTimeout(PROBE + ": time limit reached before every GPU was checked")
            out = _product(torch, device, a, b)
            outputs[device.index] = out
            errors[device.index] = max(errors.get(device.index, 0.0), _error(torch, out, reference))
            ctx.advance(PROBE, device.index, "round %d/%d" % (round_no + 1, ROUNDS))
    free_device_memory(torch, ctx.devices)
    _report(ctx, n, errors, outputs)


def _inputs(torch: Any, n: int) -> Tuple[Any, Any]:
    gen = torch.Generator().manual_seed(SEED)
    a = torch.rand(n, n, generator=gen, dtype=torch.float64) * 2 - 1
    b = torch.rand(n, n, generator=gen, dtype=torch.float64) * 2 - 1
    return a, b


def _product(torch: Any, device: ProbeDevice, a: Any, b: Any) -> Any:
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # TF32 would exceed the float32 tolerance
    try:
        left = a.to(device=device.torch_device, dtype=torch.float32)
        right = b.to(device=device.torch_device, dtype=torch.float32)
        out = left @ right
        if device.sdc:
            corrupt(torch, out)
        return out.cpu()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def corrupt(torch: Any, out: Any) -> None:
    """Flip mantissa bit ``FLIPPED_BIT`` of the largest-magnitude element, in place."""
    flat = out.view(-1)
    where = int(flat.abs().argmax())
    bits = flat[where : where + 1].view(torch.int32)
    bits ^= 1 << FLIPPED_BIT


def _error(torch: Any, out: Any, reference: Any) -> float:
    if not bool(torch.isfinite(out).all()):
        return float("inf")
    scale = float(reference.abs().max()) or 1.0
    return float((out.double() - reference).abs().max()) / scale


def _report(ctx: ProbeContext, n: int, errors: Dict[int, float], outputs: Dict[int, Any]) -> None:
    for device in ctx.devices:
        error = errors[device.index]
        differing = _differing_peers(ctx.torch, device.index, outputs)
        ok = error <= TOLERANCE
        detail = "matches the float64 reference" if ok else "result differs from the reference"
        ctx.emit.result(
            PROBE,
            "max_rel_err",
            device.index,
            error,
            "rel",
            ok=ok,
            n=n,
            tolerance=TOLERANCE,
            differing_peers=differing,
            detail=detail,
            name=device.name,
        )


def _differing_peers(torch: Any, index: int, outputs: Dict[int, Any]) -> List[int]:
    """Peers whose result differs from this GPU's by more than the tolerance."""
    mine = outputs[index]
    scale = float(mine.abs().max()) or 1.0
    differing = []
    for other, theirs in outputs.items():
        if other == index:
            continue
        gap = float((mine - theirs).abs().max()) / scale
        if not gap <= TOLERANCE:  # NaN compares false: it differs
            differing.append(other)
    return differing
