"""Per-node answers worked out from a node's briefs, kept while its briefs stay the same.

The fleet state hands out the same tuple of briefs for a node while none of its GPUs' or
ports' facts changed (fleet/briefs.py). The dashboard's fleet-wide readers (the header's
counts, the Failed GPUs panel, the interconnect panel's scan) read only briefs, so each
node's part of their answer is worked out when its briefs change, not for 1,000 nodes
every tick. A node not backed by the state's rows makes new briefs on every read, so
its part is worked out every time, as without the memo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from fleet.facade import NodeSnapshot

T = TypeVar("T")


class BriefMemo(Generic[T]):
    """``work_out(node)`` per node, kept while the node's name and briefs are the same.

    ``work_out`` must read nothing of the node but its name and the briefs named by
    ``ports`` (GPU briefs only, or GPU, port and NIC briefs).
    """

    def __init__(self, work_out: Callable[[NodeSnapshot], T], *, ports: bool = False) -> None:
        self._work_out = work_out
        self._ports = ports
        # By node name: the briefs tuples the answer was worked out from, then the answer.
        # A name is hashed once per string object, where a key tuple of the name and three
        # ids was built and hashed for every node on every tick.
        self._now: dict[str, tuple[object, object, object, T]] = {}
        self._last: dict[str, tuple[object, object, object, T]] = {}

    def next_tick(self) -> None:
        """A new snapshot: answers not asked for since the previous one are dropped."""
        self._last, self._now = self._now, {}

    def get(self, node: NodeSnapshot) -> T:
        """The node's answer, worked out again only when one of its briefs tuples changed."""
        gpus = node.gpu_briefs
        if self._ports:
            ports, nics = node.port_briefs, node.nic_briefs
        else:
            ports = nics = ()
        # An entry holds the tuples it was worked out from, so a tuple found there by
        # identity is the same briefs (no other object can take the id of one held).
        name = node.name
        hit = self._now.get(name)
        if hit is None:
            hit = self._last.get(name)
        if hit is None or hit[0] is not gpus or hit[1] is not ports or hit[2] is not nics:
            hit = (gpus, ports, nics, self._work_out(node))
        self._now[name] = hit
        return hit[3]
