"""Link events: what changed on a node's links between two consecutive snapshots.

The state keeps each port's and GPU's *current* readings; docs/history.md promises the
*changes* as rows of the ``events`` table. :class:`LinkEventDiffer` compares each
snapshot with the previous one and names what happened:

==================  =========================================================  =======
kind                when                                                       code
==================  =========================================================  =======
``link_down``       an IB/RoCE/EFA port leaves ACTIVE (or a NIC goes down)     null
``link_up``         it is ACTIVE (up) again                                    null
``link_downed``     the port's ``link_downed`` counter grew                    +n
``link_rate_low``   an ACTIVE port runs below its expected rate                Gb/s
``link_rate_ok``    it runs at its expected rate again                         Gb/s
``nvlink_down``     a GPU has fewer active NVLinks than before                 active
``nvlink_up``       it has more again                                          active
==================  =========================================================  =======

The first sight of a node is its baseline (nothing is claimed about the time before).
Times are the snapshot's (the controller's tick), within one interval of the change.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import chain
from operator import attrgetter

from fleet.model import EventRecord, FleetSnapshot, GpuBrief, NodeSnapshot, PortBrief, evolve

LINK_KINDS = (
    "link_down",
    "link_up",
    "link_downed",
    "link_rate_low",
    "link_rate_ok",
    "nvlink_down",
    "nvlink_up",
)
_PORT_KEY = attrgetter(
    "name", "kind", "state", "phys_state", "rate_gbps", "expected_rate_gbps", "link_downed"
)
_GPU_KEY = attrgetter("index", "uuid", "nvlink_active", "nvlink_total")
RECENT_PER_NODE = 32  # derived events kept per node for the node screen
# Events the controller derives (not the agent) have no place in the state's per-node
# ring: this module keeps them, its own and fleet.drift's, to show on the node screen.
DERIVED_KINDS = frozenset((*LINK_KINDS, "gpu_swap", "repeat_offender"))


@dataclass(frozen=True, slots=True)
class _PortView:
    up: bool | None  # None: state unknown
    slow: bool  # ACTIVE below the expected rate
    link_downed: int | None


# A few distinct views serve every port (up, at rate, link_downed 0 for most): one kept
# view per port was 9,000 objects at 1,000 nodes.
@lru_cache(maxsize=1024)
def _view(up: bool | None, slow: bool, link_downed: int | None) -> _PortView:
    return _PortView(up, slow, link_downed)


def _port_view(port: PortBrief) -> _PortView:
    if port.kind == "eth":
        up = None if port.state is None else port.state == "up"
    else:
        up = None if port.state is None else port.state == "ACTIVE"
    rate, expected = port.rate_gbps, port.expected_rate_gbps
    slow = bool(up and rate is not None and expected and rate < expected)
    return _view(up, slow, port.link_downed)


def _links_key(
    ports: Sequence[PortBrief], nics: Sequence[PortBrief], gpus: Sequence[GpuBrief]
) -> tuple[object, ...]:
    """What the link events read of a node, as one flat tuple (built in C).

    Flat, not a tuple per port: one is kept per node (~1 KiB less each). The two counts
    keep it unambiguous, as every port gives the same number of fields.
    """
    return (
        len(ports),
        len(nics),
        *chain.from_iterable(map(_PORT_KEY, ports)),
        *chain.from_iterable(map(_PORT_KEY, nics)),
        *chain.from_iterable(map(_GPU_KEY, gpus)),
    )


class LinkEventDiffer:
    """Remembers the previous snapshot's links and reports what changed."""

    def __init__(self) -> None:
        # Per node, not per (node, port) key: a key tuple per port and GPU was ~1 MiB.
        self._ports: dict[str, dict[str, _PortView]] = {}  # node -> port -> last view
        self._nvlink: dict[str, dict[str, int]] = {}  # node -> GPU UUID -> active links
        self._recent: dict[str, deque[EventRecord]] = {}
        self._version: dict[str, int] = {}  # link events ever seen per node
        self._merged: dict[str, tuple[NodeSnapshot, int, NodeSnapshot]] = {}
        self.counts: dict[str, int] = dict.fromkeys(LINK_KINDS, 0)
        self._keys: dict[str, tuple[object, ...]] = {}  # per node: its links' last key
        self._briefs: dict[str, tuple[object, ...]] = {}  # per node: the briefs keyed last

    def diff(self, snapshot: FleetSnapshot) -> tuple[EventRecord, ...]:
        """The link events between the previous snapshot and ``snapshot``."""
        at = snapshot.taken_at
        events = [e for node in snapshot.nodes for e in self._node_events(node, at)]
        for event in events:
            self.counts[event.kind] += 1
            self._remember(event)
        return tuple(events)

    def _remember(self, event: EventRecord) -> None:
        self._recent.setdefault(event.node, deque(maxlen=RECENT_PER_NODE)).append(event)
        self._version[event.node] = self._version.get(event.node, 0) + 1

    def apply(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        """``snapshot`` with its link events in ``new_events`` and in each node's events."""
        events = self.diff(snapshot)
        for event in snapshot.new_events:
            if event.kind in DERIVED_KINDS:
                self._remember(event)
        nodes = snapshot.nodes
        if self._recent:
            merged = tuple(self._with_recent(node) for node in nodes)
            # Keep the state's tuple when no node changed: readers skip unchanged ticks by it.
            if any(a is not b for a, b in zip(merged, nodes, strict=True)):
                nodes = merged
        if not events and nodes is snapshot.nodes:
            return snapshot
        return replace(snapshot, nodes=nodes, new_events=snapshot.new_events + events)

    def _with_recent(self, node: NodeSnapshot) -> NodeSnapshot:
        recent = self._recent.get(node.name)
        if not recent:
            return node
        cached, version = self._merged.get(node.name), self._version[node.name]
        # The same state object and no new link event: hand out the same merged object.
        if cached is not None and cached[0] is node and cached[1] == version:
            return cached[2]
        limit = max(len(node.events), RECENT_PER_NODE)
        merged = sorted((*node.events, *recent), key=lambda e: e.t)[-limit:]
        result = evolve(node, events=tuple(merged))
        self._merged[node.name] = (node, version, result)
        return result

    def _node_events(self, node: NodeSnapshot, at: float) -> Iterator[EventRecord]:
        # Telemetry changes every tick, links seldom: the state hands out the same brief
        # tuples while no link changed; else compare one key per node (built in C) and
        # look closer only when it changed.
        ports, nics, gpus = node.port_briefs, node.nic_briefs, node.gpu_briefs
        seen = self._briefs.get(node.name)
        if seen is not None and seen[0] is ports and seen[1] is nics and seen[2] is gpus:
            return
        self._briefs[node.name] = (ports, nics, gpus)
        key = _links_key(ports, nics, gpus)
        if self._keys.get(node.name) == key:
            return
        self._keys[node.name] = key
        views = self._ports.setdefault(node.name, {})
        for port in (*ports, *nics):
            yield from _port_events(node.name, port, at, views)
        active = self._nvlink.setdefault(node.name, {})
        for gpu in gpus:
            yield from _nvlink_events(node.name, gpu, at, active)


def _port_events(
    node: str, port: PortBrief, at: float, views: dict[str, _PortView]
) -> Iterator[EventRecord]:
    """``port``'s events against its view in ``views`` (which it then replaces)."""
    now, before = _port_view(port), views.get(port.name)
    views[port.name] = now
    if before is None:
        return
    name = port.name
    if before.up is not None and now.up is not None and before.up != now.up:
        if now.up:
            yield EventRecord(at, node, "link_up", detail=f"{name} up")
        else:
            state = f"state {port.state}"
            phys = f", phys_state {port.phys_state}" if port.phys_state else ""
            yield EventRecord(at, node, "link_down", detail=f"{name} {state}{phys}")
    grew = _growth(before.link_downed, now.link_downed)
    if grew:
        detail = f"{name} link_downed +{grew}"
        yield EventRecord(at, node, "link_downed", code=grew, detail=detail)
    if before.slow != now.slow and now.up:
        yield _rate_event(node, port, at, now.slow)


def _nvlink_events(
    node: str, gpu: GpuBrief, at: float, seen: dict[str, int]
) -> Iterator[EventRecord]:
    """``gpu``'s NVLink events against its active links in ``seen`` (then replaced)."""
    active, total = gpu.nvlink_active, gpu.nvlink_total
    if active is None or not gpu.uuid:
        return
    before = seen.get(gpu.uuid)
    seen[gpu.uuid] = active
    if before is None or before == active:
        return
    kind = "nvlink_down" if active < before else "nvlink_up"
    of = f" of {total}" if total else ""
    detail = f"GPU {gpu.index}: NVLink {active}{of} links active (was {before})"
    yield EventRecord(at, node, kind, gpu.index, gpu.uuid, active, detail)


def _growth(before: int | None, now: int | None) -> int:
    if before is None or now is None:
        return 0
    return now - before if now > before else 0  # a counter that went down was reset


def _rate_event(node: str, port: PortBrief, at: float, slow: bool) -> EventRecord:
    rate = port.rate_gbps or 0.0
    code = round(rate)
    if slow:
        detail = f"{port.name} rate {rate:g} Gb/s < expected {port.expected_rate_gbps:g}"
        return EventRecord(at, node, "link_rate_low", code=code, detail=detail)
    return EventRecord(
        at, node, "link_rate_ok", code=code, detail=f"{port.name} rate {rate:g} Gb/s"
    )
