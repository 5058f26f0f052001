"""What the dashboard reads of every node every tick: verdicts and counts, not objects.

The fleet state builds a node's GpuSnapshot / PortSnapshot objects on first read
(issue #11), so a reader that walks every node's ``gpus`` each tick builds the whole
fleet's objects again. Fleet-wide readers (header counts, Failed GPUs, the interconnect
panel's scan, health sort, filters, map mode) go through these functions and read only
the fields below; a node's full objects are read for the lines on screen and the node
screen. Both the snapshot objects and the state's briefs (``fleet.model.GpuBrief``,
``PortBrief``) have these fields, so only the three accessors name the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fleet.facade import NodeSnapshot, ProbeVerdict, Verdict


class GpuFacts(Protocol):
    """A GPU's identity, verdict and NVLink state (no telemetry figures)."""

    @property
    def index(self) -> int: ...
    @property
    def uuid(self) -> str: ...
    @property
    def serial(self) -> str | None: ...
    @property
    def lost(self) -> bool: ...
    @property
    def verdict(self) -> Verdict: ...
    @property
    def reasons(self) -> tuple[str, ...]: ...
    @property
    def since(self) -> float | None: ...
    @property
    def nvlink_active(self) -> int | None: ...
    @property
    def nvlink_total(self) -> int | None: ...
    @property
    def probe_verdict(self) -> ProbeVerdict | None: ...


class PortFacts(Protocol):
    """A port's or NIC's link state and verdict (no counters or rates)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def state(self) -> str | None: ...
    @property
    def phys_state(self) -> str | None: ...
    @property
    def rate_gbps(self) -> float | None: ...
    @property
    def expected_rate_gbps(self) -> float | None: ...
    @property
    def verdict(self) -> Verdict: ...
    @property
    def reasons(self) -> tuple[str, ...]: ...


# After the lazy snapshot of #11 lands these read ``node.gpu_briefs``, ``node.port_briefs``
# and ``node.nic_briefs`` (GpuBrief then needs ``probe_verdict``, copied by GpuBrief.of:
# FleetProber's decorated nodes carry the probe's finding in their GPU objects).
def gpu_facts(node: NodeSnapshot) -> Sequence[GpuFacts]:
    """Each visible GPU's verdict, reasons and identity."""
    return node.gpu_briefs


def port_facts(node: NodeSnapshot) -> Sequence[PortFacts]:
    """Each fabric port's link state and verdict."""
    return node.port_briefs


def nic_facts(node: NodeSnapshot) -> Sequence[PortFacts]:
    """Each Ethernet NIC's link state and verdict."""
    return node.nic_briefs


def link_trouble(port: PortFacts) -> bool:
    """Whether a port needs a closer look: judged not ok, or its link is not plainly up.

    An error counter that grows makes the health rules warn (symbol errors, link_downed),
    so a port judged ``ok`` with an active, full-rate link has nothing to show.
    """
    if port.verdict != "ok":
        return True
    state = (port.state or "").upper()
    if state in ("DOWN", "INIT", "ARMED") or (port.phys_state or "LinkUp").lower() != "linkup":
        return True
    if port.state is None:
        return True
    return port.rate_gbps is not None and port.rate_gbps < (port.expected_rate_gbps or 0)


def nvlink_trouble(gpu: GpuFacts) -> bool:
    """Whether a GPU's NVLink needs a closer look: a link down, or a verdict that may be
    about NVLink (CRC, replay and recovery findings make the GPU warn or fail)."""
    active, total = gpu.nvlink_active, gpu.nvlink_total
    if active is not None and total is not None and active < total:
        return True
    return gpu.verdict in ("warn", "fail")
