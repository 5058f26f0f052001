"""One pass over a snapshot's nodes, shared by every fleet-wide reader of the dashboard.

The header's counts, the Failed GPUs panel, the interconnect panel's scan and the grid's
column widths each read every node's briefs. Walking 1,000 nodes once per reader per
tick cost more than what they do with them, so the main screen works out each node's
part once per snapshot (kept by :class:`BriefMemo` while the node's briefs are the same
objects) and the readers take their share of it.
"""

from __future__ import annotations

from fleet.facade import FleetSnapshot, NodeSnapshot
from tui.brief_memo import BriefMemo
from tui.header_view import gpu_counts
from tui.node_facts import port_facts
from tui.panels import FailedGpu, node_failed_gpus, node_link_trouble

NodePart = tuple[tuple[int, int, int], int, tuple[FailedGpu, ...], tuple[bool, bool]]


def node_part(node: NodeSnapshot) -> NodePart:
    """What the fleet-wide readers take of one node: GPU counts, fabric ports, failed
    GPUs, link trouble (from its briefs only)."""
    return gpu_counts(node), len(port_facts(node)), node_failed_gpus(node), node_link_trouble(node)


class FleetDigest:
    """The readers' shares of one snapshot, worked out once; a new snapshot, a new pass."""

    def __init__(self) -> None:
        self._memo = BriefMemo(node_part, ports=True)
        self._snapshot: FleetSnapshot | None = None
        self.counts: tuple[tuple[int, int, int], ...] = ()  # per node: gpu_counts
        self.ports: tuple[int, ...] = ()  # per node: fabric ports
        self.failed: tuple[tuple[FailedGpu, ...], ...] = ()  # per node: node_failed_gpus
        self.trouble: tuple[tuple[bool, bool], ...] = ()  # per node: node_link_trouble

    def of(self, snapshot: FleetSnapshot) -> FleetDigest:
        """This digest, brought up to ``snapshot`` (its tuples follow ``snapshot.nodes``)."""
        if snapshot is not self._snapshot:
            self._memo.next_tick()
            parts = list(map(self._memo.get, snapshot.nodes))
            if parts:  # one transpose in C, not four generator passes over the fleet
                self.counts, self.ports, self.failed, self.trouble = zip(*parts, strict=True)
            else:
                self.counts, self.ports, self.failed, self.trouble = (), (), (), ()
            self._snapshot = snapshot
        return self
