"""XID catalog: what an XID means, which class it belongs to and its default verdict.

Sources (see /work/shared/reference/nvml-ib.md §2.1 and docs/health.md):
the NVIDIA Xid catalog for Ampere and newer (docs.nvidia.com/deploy/xid-errors/),
DCGM ``BuildXidMappings()`` (``modules/health/DcgmHealthWatch.cpp``), the
k8s-device-plugin application set {13, 31, 43, 45, 68, 109}, and GCM's
non-critical set. Classes decide how a verdict clears (``fleet.health.gpu``):

- ``app``: the application's fault; warn, held for ``xid_app_hold_s`` after the last one.
- ``hardware``: the GPU needs a reset; held until the GPU's UUID changes or the agent
  starts a new session with the GPU answering (the reset or reboot restarted it).
- ``info``: informational; another signal (a flag, a counter) carries the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

XidClass = Literal["app", "hardware", "info"]
XidVerdict = Literal["ok", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class XidInfo:
    """One catalog entry."""

    code: int
    meaning: str
    xid_class: XidClass
    verdict: XidVerdict
    action: str  # what the fleet operator should do


def _entry(code: int, meaning: str, cls: XidClass, verdict: XidVerdict, action: str) -> XidInfo:
    return XidInfo(code, meaning, cls, verdict, action)


CATALOG: dict[int, XidInfo] = {
    x.code: x
    for x in (
        _entry(13, "graphics engine exception", "app", "warn", "restart the application"),
        _entry(31, "GPU memory page fault", "app", "warn", "restart the application"),
        _entry(43, "GPU stopped processing", "app", "warn", "none; the application faulted"),
        _entry(45, "preemptive cleanup", "app", "warn", "follow the accompanying XID"),
        _entry(48, "double-bit ECC error", "hardware", "fail", "drain and reset; RMA if it recurs"),
        _entry(61, "internal micro-controller breakpoint", "hardware", "warn", "investigate"),
        _entry(62, "internal micro-controller halt", "hardware", "fail", "drain and reset"),
        _entry(63, "row-remap / page-retirement event", "info", "ok", "reset when idle"),
        _entry(64, "row-remap failure", "hardware", "fail", "drain; RMA candidate"),
        _entry(68, "video processor exception", "app", "warn", "restart the application"),
        _entry(74, "NVLink error", "hardware", "fail", "drain; inspect link counters"),
        _entry(79, "GPU has fallen off the bus", "hardware", "fail", "drain and reboot"),
        _entry(92, "high single-bit ECC error rate", "info", "ok", "trend it"),
        _entry(94, "contained ECC error", "hardware", "warn", "GPU reusable; reset later"),
        _entry(95, "uncontained ECC error", "hardware", "fail", "drain and reset"),
        _entry(109, "context switch timeout", "app", "warn", "restart the application"),
        _entry(119, "GSP RPC timeout", "hardware", "fail", "drain and reset"),
        _entry(120, "GSP error", "hardware", "fail", "drain and reset"),
        _entry(140, "unrecovered ECC escape", "hardware", "fail", "drain and reset"),
        _entry(154, "GPU recovery action changed", "info", "ok", "read the recovery action"),
    )
}


def describe(code: int) -> XidInfo:
    """The catalog entry for ``code``; an unlisted XID is ``info`` and warns.

    An XID the catalog does not know is most likely from a newer driver: GCM calls
    every such XID critical, but draining nodes on an unknown code would punish an
    informational one, so it warns (``HealthSection.unknown_xid_verdict`` changes that).
    """
    known = CATALOG.get(code)
    if known is not None:
        return known
    return XidInfo(code, "not in the catalog", "info", "warn", "look it up in NVIDIA's catalog")


def xid_text(code: int) -> str:
    """Short human text: ``"XID 79: GPU has fallen off the bus"``."""
    return f"XID {code}: {describe(code).meaning}"
