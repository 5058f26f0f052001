"""[health] thresholds of the health rules (docs/health.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from collectors.agent.fields import PORT_COUNTER_BITS
from fleet.settings.base import Section
from fleet.xid import XID_RECENT_MAX

XidVerdictSetting = Literal["ok", "warn", "fail"]


class XidPolicy(Section):
    """An escalation for one XID code: its verdict once it repeats often enough."""

    count: int = Field(default=1, ge=1, le=XID_RECENT_MAX)
    """Occurrences of the code on one GPU that escalate it."""
    window_s: float = Field(default=3600.0, gt=0)
    """Seconds within which ``count`` occurrences must fall."""
    verdict: XidVerdictSetting = "fail"
    """The verdict while the escalation holds."""


class HealthSection(Section):
    """[health] thresholds of the health rules (docs/health.md)."""

    xid_app_hold_s: float = Field(default=600.0, ge=0)
    """Seconds an application-class XID (catalog action RESTART_APP: 13, 31, 94, ...) keeps
    its GPU at warn after its last occurrence."""
    xid_hardware_hold_s: float | None = Field(default=None, ge=0)
    """Seconds a hardware-class XID (catalog action RESET_GPU, RESTART_BM, RESTART_VM, a
    workflow, CONTACT_SUPPORT: 48, 62, 74, 79, 109, ...) holds its verdict.
    Unset: until the GPU is reset or swapped (its UUID changes, or the agent starts a new
    session with the GPU answering)."""
    xid_verdicts: dict[int, XidVerdictSetting] = Field(default_factory=dict)
    """Per-XID verdict overrides, e.g. ``{"13" = "ok", "92" = "warn"}``."""
    unknown_xid_verdict: XidVerdictSetting = "warn"
    """Verdict of an XID the catalog does not list or assigns no action yet (held like an
    application XID)."""
    xid_policy: dict[int, XidPolicy] = Field(default_factory=dict)
    """Per-XID escalation by repetition, e.g. ``{"94" = {count = 3, window_s = 3600,
    verdict = "fail"}}``: while that many occurrences on one GPU fall within the window,
    the verdict is at least the policy's."""

    ecc_unc_volatile_fail: int = Field(default=1, ge=1)
    """Volatile uncorrected ECC errors at or above this fail the GPU (DCGM MEM: any DBE)."""
    retired_pages_fail: int = Field(default=63, ge=1)
    """Retired pages (SBE + DBE cause) at or above this fail the GPU (DCGM MEM)."""
    remap_unc_warn: int = Field(default=512, ge=1)
    """Rows remapped for uncorrectable errors at or above this warn (DCGM MEM)."""

    nvlink_error_hold_s: float = Field(default=600.0, ge=0)
    """Seconds an NVLink replay or recovery increment keeps its GPU at fail."""
    nvlink_crc_fail_per_s: float = Field(default=100.0, gt=0)
    """NVLink CRC errors per second (flit + data, on any one link) at or above this fail
    (DCGM: "CRC errors only matter at 100+/s")."""
    nvlink_crc_warn_per_s: float = Field(default=0.0, ge=0)
    """NVLink CRC errors per second above this (and below the fail rate) warn."""

    clock_reasons_warn_mask: int = Field(default=0x8 | 0x40 | 0x80, ge=0)
    """Clock-event-reason bits that warn: 0x8 HW slowdown, 0x40 HW thermal, 0x80 power brake."""
    recovery_actions_fail: list[int] = Field(default_factory=lambda: [1, 2, 4, 6, 7])
    """NVML recovery actions (FI 230) that fail the GPU: 1 GPU reset, 2 node reboot,
    4 drain and reset, 6 bus reset, 7 system reboot (DCGM DRIVER watch)."""
    recovery_actions_warn: list[int] = Field(default_factory=lambda: [3, 5])
    """NVML recovery actions that warn: 3 drain P2P, 5 recover IMEX domain."""

    expected_port_rate_gbps: float | None = Field(default=None, gt=0)
    """Expected InfiniBand / RoCE port rate in Gb/s. Unset: the highest rate seen on the
    node's ports of the same kind."""
    port_fatal_counters: list[str] = Field(
        default_factory=lambda: [
            "link_downed",
            "local_link_integrity_errors",
            "excessive_buffer_overrun_errors",
        ]
    )
    """Port counters whose every increment fails the port (NVSentinel: fatal on any delta)."""
    port_fatal_hold_s: float = Field(default=600.0, ge=0)
    """Seconds an increment of a fatal port counter (e.g. link_downed) keeps the port at fail."""
    symbol_error_window_s: float = Field(default=60.0, gt=0)
    """A port warns while its symbol_error counter grew within this many seconds (HDR/NDR
    count post-FEC errors that applications see: NVIDIA ibdiagnet manual)."""
    symbol_error_fail_per_s: float = Field(default=10.0, gt=0)
    """symbol_error per second above this fail the port (NVSentinel: >10/s)."""
    port_rcv_errors_warn_per_s: float = Field(default=10.0, gt=0)
    """port_rcv_errors per second above this warn (NVSentinel: >10/s)."""
    xmit_discards_warn_per_s: float = Field(default=100.0, gt=0)
    """port_xmit_discards per second above this warn (NVSentinel: >100/s)."""

    stale_intervals: float = Field(default=3.0, gt=0)
    """A streaming node whose last sample is older than this many sample intervals is stale."""
    stale_unreachable_s: float = Field(default=30.0, gt=0)
    """A node without a sample for this many seconds counts as unreachable."""

    @field_validator("port_fatal_counters")
    @classmethod
    def _known_counters(cls, names: list[str]) -> list[str]:
        unknown = sorted(set(names) - set(PORT_COUNTER_BITS))
        if unknown:
            raise ValueError(f"unknown port counters {unknown}; known: {sorted(PORT_COUNTER_BITS)}")
        return names
