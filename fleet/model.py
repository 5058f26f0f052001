"""Frozen snapshot types: what the fleet looks like at one instant.

``FleetState`` builds a new ``FleetSnapshot`` each tick; the dashboard, the
Prometheus collector, the history recorder and the exporters only ever read
these. Nothing here holds a connection, a lock or a mutable container.
A value that could not be read is ``None`` (shown as "N/A").

The identity contract: **an unchanged node is the same object as last tick.**

- A node with nothing new since the last tick (no message, no deadline passed, no
  stage changed it) is the very ``NodeSnapshot`` object of the last published
  snapshot; when no node changed, ``FleetSnapshot.nodes`` is the same tuple.
- A node that changed in any field is a new object; readers never see an object
  change under them (everything here is frozen).
- A node object builds its ``gpus``, ``ports`` and ``nics`` once, so an unchanged
  node hands out the same GPU and port objects tick after tick. Its
  ``gpu_briefs``, ``port_briefs`` and ``nic_briefs`` stay the same tuple while no
  GPU's identity, verdict or NVLink state (no port's link state) changed, even on a
  new node object whose telemetry moved.
- Every stage of the tick (``fleet.pipeline``) keeps it: a stage hands on what it
  does not change, and keys what it does change on the object it was given, so
  its output is as stable as its input.

Readers skip work by ``is`` and rely on this: the history recorder reuses its tick
frame when ``nodes`` is last tick's tuple (``history.recorder``), the exporter reuses
a node's exposition text (``exporter.dcgm``) and entity heads (``exporter.blocks``),
the dashboard reuses a node's figures and drawn line (``tui.node_view``,
``tui.widgets.fleet_grid``), and the cluster board its converted sums
(``cluster.board``); drift, link events, probe verdicts and the event log skip a
node by its briefs or by the node itself. A stage that copied an unchanged node
would leave every one of them recomputing every node every tick (tests/runtime/
test_pipeline.py holds the contract).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from collectors.updates import NodeStatus
from fleet.briefs import GpuBrief, PortAlarms, PortBrief
from fleet.jobs import JobInterval  # a runtime import: msgspec decodes it off the bus
from fleet.lazy_fields import PENDING as PENDING  # the state passes it for lazy fields
from fleet.lazy_fields import NodeRows, copier, evolved, install_lazy_fields

Verdict = Literal["ok", "warn", "fail", "lost", "unknown"]
VERDICTS: tuple[Verdict, ...] = ("ok", "warn", "fail", "lost", "unknown")
# Severity order, used to pick the worst verdict of a set.
VERDICT_RANK: dict[Verdict, int] = {"ok": 0, "unknown": 1, "warn": 2, "fail": 3, "lost": 4}

NodeState = Literal["up", "broken", "unreachable"]
ProbeVerdict = Literal["pass", "slow", "straggler", "fail"]


@dataclass(frozen=True, slots=True)
class GpuSnapshot:
    """One GPU: identity, latest telemetry, derived rates and its health verdict."""

    index: int
    uuid: str
    name: str
    serial: str | None = None
    pci_bus_id: str | None = None
    memory_total_bytes: int | None = None
    lost: bool = False
    # Latest fast fields (see collectors.agent.fields.GPU_FIELDS for units).
    util_gpu: float | None = None
    util_mem: float | None = None
    sm_active: float | None = None
    tensor_active: float | None = None
    mem_used_bytes: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    clock_reasons: int | None = None
    pstate: int | None = None
    # Latest slow fields: cumulative counters and reliability state.
    ecc_corr_vol: int | None = None
    ecc_unc_vol: int | None = None
    ecc_corr_agg: int | None = None
    ecc_unc_agg: int | None = None
    retired_sbe: int | None = None
    retired_dbe: int | None = None
    retired_pending: bool | None = None
    remap_corr: int | None = None
    remap_unc: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    pcie_replay: int | None = None
    recovery_action: int | None = None
    nvlink_active: int | None = None
    nvlink_total: int | None = None
    # What the delivery ledger judges (slow fields; see docs/protocol.md).
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    energy_mj: int | None = None  # NVML's total energy counter since the driver loaded
    foreign_mem_mib: int | None = None  # held by processes that are not the renter's
    foreign_procs: int | None = None  # None: the agent was given no renter identity
    renter_procs: int | None = None
    # Read for DCGM-named exports (exporter/dcgm_fields.py); None where the GPU cannot say.
    mem_clock_mhz: int | None = None
    memory_temp_c: int | None = None  # HBM temperature
    power_mgmt_limit_w: float | None = None  # the management limit (the enforced one above)
    fabric_health_summary: int | None = None  # 0 n/a, 1 healthy, 2 unhealthy, 3 limited
    fabric_health_mask: int | None = None
    # Derived by FleetState from counter deltas (per second over the last slow window).
    nvlink_crc_rate: float | None = None
    nvlink_replay_delta: int | None = None
    nvlink_recovery_delta: int | None = None
    # Fields that failed on the last sample: ((field, "NVMLError_Xxx"), ...).
    field_errors: tuple[tuple[str, str], ...] = ()
    verdict: Verdict = "unknown"
    reasons: tuple[str, ...] = ()
    since: float | None = None  # when the current verdict began (unix seconds)
    probe_verdict: ProbeVerdict | None = None  # latest probe verdict, if this GPU was probed


@dataclass(frozen=True, slots=True)
class PortSnapshot:
    """One InfiniBand / RoCE / EFA port or Ethernet NIC with rates from counter deltas."""

    name: str
    kind: str  # ib | roce | efa | eth
    state: str | None = None  # "ACTIVE", "DOWN", ... ; "up"/"down" for a NIC
    phys_state: str | None = None  # "LinkUp", "Polling", ...
    rate_gbps: float | None = None
    expected_rate_gbps: float | None = None
    link_downed: int | None = None  # cumulative
    link_downed_delta: int = 0  # increments seen since the controller started
    symbol_error_rate: float | None = None  # per second
    rcv_error_rate: float | None = None
    xmit_discard_rate: float | None = None
    rx_bytes_per_s: float | None = None
    tx_bytes_per_s: float | None = None
    counters: tuple[tuple[str, int | None], ...] = ()  # latest raw counters by name
    verdict: Verdict = "unknown"
    reasons: tuple[str, ...] = ()
    since: float | None = None


@dataclass(frozen=True, slots=True)
class EventRecord:
    """An event as the fleet keeps it (XIDs carry their meaning in ``detail``)."""

    t: float
    node: str
    kind: str
    gpu: int | None = None
    uuid: str | None = None
    code: int | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class NodeSnapshot:
    """One node: connection status, health state, GPUs, ports and recent events."""

    name: str
    status: NodeStatus
    status_reason: str = ""
    last_seen: float | None = None
    state: NodeState = "unreachable"
    broken_reasons: tuple[str, ...] = ()
    state_since: float | None = None
    expected_gpus: int = 8
    gpus: tuple[GpuSnapshot, ...] = ()
    ports: tuple[PortSnapshot, ...] = ()
    nics: tuple[PortSnapshot, ...] = ()
    events: tuple[EventRecord, ...] = ()  # most recent, oldest first, bounded
    driver: str | None = None
    cuda: str | None = None
    agent_version: str | None = None
    # The agent's latest hello: a new boot id is a reboot, a new machine id another
    # machine under this name (fleet/drift.py).
    boot_id: str | None = None
    machine_id: str | None = None
    model: str | None = None  # GPU model name of GPU 0
    sampled_at: float | None = None  # the node's own clock on its latest sample (Sample.t)
    jobs: tuple[JobInterval, ...] = ()  # the scheduler jobs on its GPUs now, by GPU
    # Set by FleetState: gpus/ports/nics passed as PENDING are built from these rows.
    rows: NodeRows | None = field(default=None, compare=False, repr=False)

    @property
    def broken(self) -> bool:
        """True when the node counts as down for the fleet (broken or unreachable)."""
        return self.state != "up"

    @property
    def healthy_gpus(self) -> int:
        """GPUs whose verdict is ok or warn."""
        return sum(1 for g in self._gpu_verdicts() if g.verdict in ("ok", "warn"))

    @property
    def gpu_count(self) -> int:
        """``len(gpus)`` without building the GPU objects."""
        return len(self._gpu_verdicts())

    def _gpu_verdicts(self) -> tuple[GpuBrief, ...] | tuple[GpuSnapshot, ...]:
        """The briefs where the node's rows have them, else the GPU objects it holds (a
        brief per GPU built per call would only copy their fields: a 1,000-node scrape
        of nodes decoded from the cluster's wire built 16,000 of them)."""
        return self.gpu_briefs if self.rows is not None else self.gpus

    @property
    def gpu_briefs(self) -> tuple[GpuBrief, ...]:
        """Identity, verdict and NVLink state of each GPU (the same object while unchanged)."""
        rows = self.rows  # inlined _from_rows: readers ask several times per node per tick
        if rows is not None:
            raw = _GPUS_SLOT(self)
            if raw is PENDING or raw is rows.built("gpus"):
                return rows.gpu_briefs
        return tuple(map(GpuBrief.of, self.gpus))

    @property
    def port_briefs(self) -> tuple[PortBrief, ...]:
        """Link state and verdict of each port (the same object while unchanged)."""
        rows = self.rows  # inlined _from_rows: readers ask several times per node per tick
        if rows is not None:
            raw = _PORTS_SLOT(self)
            if raw is PENDING or raw is rows.built("ports"):
                return rows.port_briefs
        return tuple(map(PortBrief.of, self.ports))

    @property
    def nic_briefs(self) -> tuple[PortBrief, ...]:
        """Link state and verdict of each NIC (the same object while unchanged)."""
        rows = self.rows  # inlined _from_rows: readers ask several times per node per tick
        if rows is not None:
            raw = _NICS_SLOT(self)
            if raw is PENDING or raw is rows.built("nics"):
                return rows.nic_briefs
        return tuple(map(PortBrief.of, self.nics))

    @property
    def port_alarms(self) -> tuple[PortAlarms, ...]:
        """Each port's link_downed increments and error rates at this tick, without
        building the port objects (what a port's glyph needs beyond its brief)."""
        if self._from_rows("ports"):
            assert self.rows is not None
            return self.rows.port_alarms()
        return tuple(map(PortAlarms.of, self.ports))

    def detached(self) -> NodeSnapshot:
        """This node with its GPU and port objects built and no rows: what goes on a wire
        (msgspec encodes every field) or to another process."""
        return self if self.rows is None else evolve(self, rows=None)

    def _from_rows(self, which: str) -> bool:
        # A copy made with other objects (a probe verdict, a flagged reason) answers from them.
        rows = self.rows
        if rows is None:
            return False
        raw = _RAW_FIELDS[which].__get__(self, NodeSnapshot)
        return raw is PENDING or raw is rows.built(which)


@dataclass(frozen=True, slots=True)
class SlaSummary:
    """Month-to-date SLA figures for the header and the SLA panel."""

    month: str  # "YYYY-MM"
    availability_pct: float | None
    slo_pct: float
    coverage_pct: float
    down_node_hours: float
    tier_credit_pct: float
    credit_owed: float  # in ``currency``, under the configured credit model
    currency: str
    credit_model: str
    # The panel's words, computed by the SLA ledger (ledger/sla/summary.py panel_texts).
    money_text: str = ""  # the credit as printed, or "insufficient coverage (projection, ...)"
    money_withheld: str | None = None  # why no money is claimed yet
    down_text: str = ""  # down node-hours at the precision of the availability shown
    notes: tuple[str, ...] = ()  # "16 committed slots never seen ...", "no gpu_hour_price ..."

    @property
    def reading(self) -> str:
        """How a month-to-date figure must be read, e.g. "provisional · coverage 96.7 %".

        A month that has not ended is provisional; an undefined availability is "not
        measured", never "below SLO".
        """
        if self.availability_pct is None:
            return f"not measured yet · coverage {self.coverage_pct:.1f} %"
        return f"provisional · coverage {self.coverage_pct:.1f} %"


@dataclass(frozen=True, slots=True)
class UtilizationSummary:
    """Fleet utilization now and its rolling averages (percent, None until known)."""

    now: float | None = None
    avg_1h: float | None = None
    avg_24h: float | None = None


@dataclass(frozen=True, slots=True)
class NodeTransition:
    """A node entered ``state`` at ``at`` (the previous interval of that node ends there)."""

    node: str
    state: NodeState
    at: float
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GpuColumns:
    """Every GPU of a tick as rows of arrays (one row per GPU slot, never written again).

    ``fast`` holds the fast fields in ``collectors.agent.fields.GPU_FIELDS`` order (NaN
    where a value is missing); ``verdict`` each GPU's ``VERDICT_RANK``. A node backed by
    rows owns ``rows.gpu_start`` to ``gpu_start + gpu_count``; other rows are unused.
    """

    fast: np.ndarray
    verdict: np.ndarray


@dataclass(frozen=True, slots=True)
class FleetSnapshot:
    """The whole fleet at ``taken_at``: the one object every reader is handed."""

    taken_at: float
    nodes: tuple[NodeSnapshot, ...]
    utilization: UtilizationSummary = UtilizationSummary()
    sla: SlaSummary | None = None  # None when no contract is configured
    # What happened since the previous snapshot, for the history recorder and exporters.
    transitions: tuple[NodeTransition, ...] = ()
    new_events: tuple[EventRecord, ...] = ()
    # Set by FleetState: the job on each GPU now, and the intervals that ended since
    # the previous snapshot (fleet/jobs.py; docs/jobs.md).
    jobs: tuple[JobInterval, ...] = ()
    ended_jobs: tuple[JobInterval, ...] = ()
    # Set by FleetState: every GPU's fast readings and verdict as columns.
    columns: GpuColumns | None = field(default=None, compare=False, repr=False)

    @property
    def nodes_streaming(self) -> int:
        return sum(1 for n in self.nodes if n.status == "streaming")

    @property
    def nodes_broken(self) -> int:
        return sum(1 for n in self.nodes if n.broken)

    @property
    def gpus_total(self) -> int:
        """GPUs of the monitored nodes: an unmonitored node's GPUs (a silent shard's) are
        the monitor's gap, neither healthy nor unhealthy (``gpus_unmonitored``)."""
        return sum(
            max(n.expected_gpus, n.gpu_count) for n in self.nodes if n.status != "unmonitored"
        )

    @property
    def gpus_unmonitored(self) -> int:
        """GPUs of nodes nobody watches now (a silent shard's)."""
        return sum(
            max(n.expected_gpus, n.gpu_count) for n in self.nodes if n.status == "unmonitored"
        )

    @property
    def gpus_healthy(self) -> int:
        return sum(n.healthy_gpus for n in self.nodes)

    def node(self, name: str) -> NodeSnapshot | None:
        """The node called ``name``, or None."""
        for n in self.nodes:
            if n.name == name:
                return n
        return None


_RAW_FIELDS = install_lazy_fields(NodeSnapshot, ("gpus", "ports", "nics"))
_GPUS_SLOT, _PORTS_SLOT, _NICS_SLOT = (_RAW_FIELDS[n].__get__ for n in ("gpus", "ports", "nics"))
# The node at a later tick at which only its times and rows moved (last_seen, sampled_at,
# rows): every other field as it is, gpus/ports/nics built from the new rows when read.
restamped_node: Callable[[NodeSnapshot, float | None, float | None, NodeRows], NodeSnapshot] = (
    copier(NodeSnapshot, _RAW_FIELDS)
)


def evolve(node: NodeSnapshot, **changes: Any) -> NodeSnapshot:
    """``dataclasses.replace`` that keeps unread GPU and port tuples unbuilt."""
    return evolved(node, _RAW_FIELDS, changes)
