"""What the health rules read: per-GPU and per-port facts kept current by FleetState.

The state updates these in place as samples arrive (no allocation per sample);
the rules in :mod:`fleet.health.gpu` and :mod:`fleet.health.port` only read them.
Tests build them directly.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec

from fleet.model import Verdict
from fleet.xid import XID_RECENT_MAX


class Judgement(NamedTuple):
    """A verdict, the reasons for it, and the earliest time it may change on its own."""

    verdict: Verdict
    reasons: tuple[str, ...]
    until: float  # a hold expires then: judge again even if no data arrives (inf: never)


@dataclass(slots=True)
class XidMark:
    """XIDs of one code seen on one GPU identity, deduplicated.

    A node can log hundreds of thousands of identical XIDs: one mark keeps their count,
    the first and last time, and the latest ``XID_RECENT_MAX`` times (for a repetition
    policy, ``HealthSection.xid_policy``), never one entry per occurrence.
    """

    code: int
    first_at: float  # controller time of the first occurrence
    last_at: float  # controller time of the latest occurrence
    count: int = 1
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=XID_RECENT_MAX))

    def __post_init__(self) -> None:
        if not self.recent:
            self.recent.append(self.last_at)

    def seen(self, at: float) -> None:
        """One more occurrence at ``at`` (controller time)."""
        self.last_at = max(self.last_at, at)
        self.count += 1
        self.recent.append(at)

    def within(self, window_s: float, now: float) -> int:
        """Occurrences in the last ``window_s`` seconds before ``now`` (as far as kept)."""
        start = now - window_s
        return sum(1 for t in self.recent if t > start)


class GpuFacts(msgspec.Struct, gc=False):
    """The health-relevant readings of one GPU identity (one UUID).

    Made once a GPU identity and updated in place. It refers to numbers, strings, tuples
    of floats and its XID marks, none of which refers back, so the cyclic collector need
    not track it (its ``xids`` dict is tracked on its own once it holds a mark): 8,000
    objects at 1,000 nodes that the settle's full collection scanned.
    """

    sampled: bool = False  # at least one sample carried this GPU
    lost: bool = False
    lost_reason: str = ""
    clock_reasons: int | None = None
    ecc_unc_vol: int | None = None
    retired_pages: int | None = None  # SBE + DBE cause
    retired_pending: bool | None = None
    remap_unc: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    recovery_action: int | None = None
    nvlink_active: int | None = None
    nvlink_total: int | None = None
    # Per-link CRC rates (flit + data) over the last slow window; empty when unknown.
    nvlink_crc_link_rates: tuple[float, ...] = ()
    nvlink_crc_rate: float | None = None  # all links together
    # Last NVLink replay / recovery increment: when, and what it was ("replay +3").
    nvlink_error_at: float | None = None
    nvlink_error_note: str = ""
    xids: dict[int, XidMark] = msgspec.field(default_factory=dict)


class PortFacts(msgspec.Struct, gc=False):
    """The health-relevant readings of one InfiniBand / RoCE / EFA port or NIC.

    Made once a port and updated in place; numbers and strings, and a dict of tuples of
    numbers: not tracked by the cyclic collector, as :class:`GpuFacts`.
    """

    name: str
    kind: str
    sampled: bool = False
    state: str | None = None  # "ACTIVE", "DOWN", ...; "up"/"down" for a NIC
    phys_state: str | None = None  # "LinkUp", "Polling", ...
    rate_gbps: float | None = None
    symbol_error_rate: float | None = None
    symbol_error_saturated: bool = False
    symbol_error_at: float | None = None  # last time symbol_error grew
    rcv_error_rate: float | None = None
    xmit_discard_rate: float | None = None
    # Fatal counters (e.g. link_downed): name -> (time of the last increment, increments).
    fatal: dict[str, tuple[float, int]] = msgspec.field(default_factory=dict)
