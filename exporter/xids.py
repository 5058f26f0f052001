"""A running count of XID and link events, since snapshots carry only the recent ones.

Each ``FleetSnapshot.new_events`` holds what happened since the previous snapshot,
so the tally must see every snapshot, not just the ones a scrape happens to
read: subscribe :meth:`XidTally.observe` to the runtime. Observing the same
snapshot twice (the subscription and a scrape) or an older one counts nothing.

A profile charges ``observe`` 4-12 ms a tick at 1,000 nodes: the tally holds the last
snapshot (to tell it from a copy of it, whose events count again), so it is the
previous fleet view's last owner and the view is freed there. Holding less would move
that work to the runtime, not save it.
"""

from __future__ import annotations

import threading

from fleet.link_events import LINK_KINDS
from fleet.model import EventRecord, FleetSnapshot, NodeSnapshot

XidKey = tuple[str, str, str, str, str]
"""(node, gpu index, uuid, model, xid code) as label values; unknown parts are ""."""
LinkKey = tuple[str, str]
"""(node, link event kind) as label values."""
_LINK_KINDS = frozenset(LINK_KINDS)


class XidTally:
    """XID counts by node, GPU and code, and link events by node and kind, since this
    exporter started."""

    def __init__(self) -> None:
        self._counts: dict[XidKey, int] = {}
        self._links: dict[LinkKey, int] = {}
        self._last_code: dict[str, dict[int, int]] = {}  # node: GPU index: newest XID code
        self._last: FleetSnapshot | None = None
        self._last_t = float("-inf")
        # Scrapes may run in a worker thread while the loop's listener observes.
        self._lock = threading.Lock()

    def observe(self, snapshot: FleetSnapshot | None) -> None:
        """Count the XID events of ``snapshot`` unless it was already seen (or is older)."""
        if snapshot is None:
            return
        with self._lock:
            if snapshot is self._last or snapshot.taken_at < self._last_t:
                return
            self._last, self._last_t = snapshot, snapshot.taken_at
            nodes: dict[str, NodeSnapshot] | None = None  # by name, once per snapshot with XIDs
            for event in snapshot.new_events:
                if event.kind == "xid" and event.code is not None:
                    if nodes is None:
                        nodes = {n.name: n for n in reversed(snapshot.nodes)}  # first wins
                    key = _key(nodes.get(event.node), event)
                    self._counts[key] = self._counts.get(key, 0) + 1
                    if event.gpu is not None:
                        self._last_code.setdefault(event.node, {})[event.gpu] = event.code
                elif event.kind in _LINK_KINDS:
                    link = (event.node, event.kind)
                    self._links[link] = self._links.get(link, 0) + 1

    def counts(self) -> list[tuple[XidKey, int]]:
        """Every (labels, count) so far, in a stable order."""
        with self._lock:
            return sorted(self._counts.items())

    def link_counts(self) -> list[tuple[LinkKey, int]]:
        """Every (node, kind) link-event count so far, in a stable order."""
        with self._lock:
            return sorted(self._links.items())

    def last_codes(self, node: str) -> dict[int, int]:
        """The newest XID code per GPU index of ``node`` (dcgm-exporter's ``XID_ERRORS``)."""
        with self._lock:
            return dict(self._last_code.get(node, {}))


def _key(node: NodeSnapshot | None, event: EventRecord) -> XidKey:
    uuid, model = event.uuid or "", ""
    if node is not None:
        model = node.model or ""
        for gpu in node.gpus:
            if gpu.index == event.gpu:
                uuid, model = uuid or gpu.uuid, gpu.name
                break
    gpu_label = "" if event.gpu is None else str(event.gpu)
    return (event.node, gpu_label, uuid, model, str(event.code))
