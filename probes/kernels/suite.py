"""Suites: which probes run, in which order, and how a failing probe is reported."""

from typing import Any, Dict, List, Tuple

from . import gemm, hbm, nccl, pcie, sdc
from .context import ProbeContext, ProbeTimeout

KERNELS: Dict[str, Any] = {"gemm": gemm, "hbm": hbm, "sdc": sdc, "pcie": pcie, "nccl": nccl}
SUITES: Dict[str, Tuple[str, ...]] = {
    "quick": ("gemm", "hbm", "sdc"),
    "full": ("gemm", "hbm", "sdc", "pcie", "nccl"),
}


def run_suite(ctx: ProbeContext, suite: str) -> List[str]:
    """Run every probe of ``suite``; returns the probes that did not complete.

    One probe's failure (a CUDA error, out of memory, the time limit) is reported as
    an ``error`` line naming the probe, and the next probe still runs if time is left.
    """
    names = SUITES[suite]
    ctx.steps = sum(KERNELS[name].planned_steps(ctx) for name in names)
    incomplete = []
    for name in names:
        if ctx.deadline.expired():
            ctx.emit.error("timeout", name + ": not started, time limit reached", probe=name)
            incomplete.append(name)
            continue
        try:
            KERNELS[name].run(ctx)
        except ProbeTimeout as exc:
            ctx.emit.error("timeout", str(exc), probe=name)
            incomplete.append(name)
        except Exception as exc:  # a probe's failure is a finding, never a crash of the suite
            ctx.emit.error(
                "probe_failed", "%s: %s: %s" % (name, type(exc).__name__, exc), probe=name
            )
            incomplete.append(name)
    return incomplete
