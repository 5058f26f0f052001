"""Briefs: the few facts of a GPU or port that per-tick readers compare.

The state hands out the same brief (and the same tuple of briefs) while none of these
fields changes, so drift, link events and the event log skip a node by identity instead
of building and walking every GpuSnapshot and PortSnapshot each tick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import msgspec

if TYPE_CHECKING:
    from fleet.model import GpuSnapshot, PortSnapshot, ProbeVerdict, Verdict


class GpuBrief(msgspec.Struct, frozen=True, gc=False):
    """What the per-tick readers (links, drift, the event log) need of one GPU.

    The state hands out the same brief object while none of these fields changes, so a
    reader compares a node's briefs by identity instead of building every GpuSnapshot.
    Numbers and strings only: the cyclic collector need not track it (one per GPU, kept
    for the session, scanned by every full collection that did not freeze it).
    """

    index: int
    uuid: str
    serial: str | None
    lost: bool
    verdict: Verdict
    reasons: tuple[str, ...]
    since: float | None
    nvlink_active: int | None
    nvlink_total: int | None
    probe_verdict: ProbeVerdict | None = None  # set on the GPUs FleetProber decorates

    @classmethod
    def of(cls, gpu: GpuSnapshot) -> GpuBrief:
        return cls(
            gpu.index,
            gpu.uuid,
            gpu.serial,
            gpu.lost,
            gpu.verdict,
            gpu.reasons,
            gpu.since,
            gpu.nvlink_active,
            gpu.nvlink_total,
            gpu.probe_verdict,
        )


class PortBrief(msgspec.Struct, frozen=True, gc=False):
    """What the per-tick readers need of one port or NIC (its link, not its traffic).

    Numbers and strings only, so not tracked by the cyclic collector (a NamedTuple is:
    the collector untracks plain tuples only).
    """

    name: str
    kind: str
    state: str | None
    phys_state: str | None
    rate_gbps: float | None
    expected_rate_gbps: float | None
    link_downed: int | None
    verdict: Verdict
    reasons: tuple[str, ...]
    since: float | None

    @classmethod
    def of(cls, port: PortSnapshot) -> PortBrief:
        return cls(
            port.name,
            port.kind,
            port.state,
            port.phys_state,
            port.rate_gbps,
            port.expected_rate_gbps,
            port.link_downed,
            port.verdict,
            port.reasons,
            port.since,
        )


class PortAlarms(NamedTuple):
    """A port's error readings at one tick that its glyph needs beyond its brief (not a
    brief: these move every tick, so they are read per tick without building the port)."""

    link_downed_delta: int  # increments seen since the controller started
    symbol_error_rate: float | None
    rcv_error_rate: float | None

    @classmethod
    def of(cls, port: PortSnapshot) -> PortAlarms:
        return cls(port.link_downed_delta, port.symbol_error_rate, port.rcv_error_rate)
