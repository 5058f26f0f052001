"""Inventory drift: a node that no longer has what it had, as tracked state and evidence.

A node's expected inventory is what its first healthy snapshot showed (streaming, up,
every GPU and port judged): the GPU count, its HCA ports, and each GPU's active NVLink
count (its "mask"). Every tick a streaming node is compared with it; a difference is a
node reason (``7 of 8 GPUs present at first connection``, ``mlx5_3 missing``,
``NVLink mask changed: GPU 2 16 active (was 18)``) that makes an up node broken for as
long as it lasts, so it has a start and an end in ``node_states`` and is SLA evidence.

Two GPU identity facts become events: a GPU whose serial (or UUID) at an index changed
is a swap (``gpu_swap``); a GPU serial that fails (``fail``/``lost``) again after an
earlier failure ended (a reset, or the board swapped out and back) is a repeat
offender (``repeat_offender``), remembered across restarts in ``inventory.json``.
Each slot's identity is kept there too, so a board swapped while the controller was
down is still a swap when it comes back; and a node whose every GPU changed at once
(two or more) is a replaced node (``node_replaced``), besides its per-GPU swaps.

The node's own identity comes with each agent hello: a new kernel boot id is a
``reboot`` ("boot id a -> b"), a new machine id a ``node_replaced`` ("machine id a ->
b"; then its GPUs' serials changing too is not a second one). The last ids seen are
remembered in ``inventory.json``, so a reboot while the controller was down counts.

What changes something already known (a swap, a reboot, a failure episode) is written
on the tick it is seen. What is seen for the first time (a new node's inventory, slots
and boot ids) is written at most every :data:`FIRST_SIGHTINGS_SAVE_S` and by
:meth:`DriftTracker.flush` when the controller stops: a fleet connecting wrote the whole
file on every tick a node came up, ~85 ms a write at 1,000 nodes with the indented
encoder (bench/bench_drift_store.py).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from itertools import chain
from operator import attrgetter
from pathlib import Path

from fleet.model import (
    EventRecord,
    FleetSnapshot,
    GpuBrief,
    NodeSnapshot,
    NodeState,
    NodeTransition,
    evolve,
)

log = logging.getLogger(__name__)

FAILED = frozenset(("fail", "lost"))
HEALTHY = frozenset(("ok", "warn"))
STORE_NAME = "inventory.json"
# Seconds between writes of first sightings alone; a crash loses at most this much of
# what was first seen (it is learnt again at the next start).
FIRST_SIGHTINGS_SAVE_S = 10.0
_IDENTITY_KEY = attrgetter("index", "uuid", "serial", "verdict")
_NAME = attrgetter("name")
_LINKS = attrgetter("nvlink_active")


@dataclass(frozen=True, slots=True)
class Inventory:
    """What a node is expected to have."""

    gpus: int
    ports: tuple[str, ...]  # HCA port names ("mlx5_0/1")
    nvlink: tuple[int | None, ...]  # active NVLinks per GPU index

    @staticmethod
    def of(node: NodeSnapshot) -> Inventory:
        """The inventory a snapshot shows."""
        gpus = node.gpu_briefs
        return Inventory(
            len(gpus),
            tuple(sorted(p.name for p in node.port_briefs)),
            tuple(g.nvlink_active for g in gpus),
        )


def drift_reasons(expected: Inventory, node: NodeSnapshot) -> tuple[str, ...]:
    """How ``node`` differs from ``expected`` (empty when it does not)."""
    now = Inventory.of(node)
    reasons = []
    # Fewer GPUs than configured is already the node rule's reason ("7 of 8 GPUs visible").
    if now.gpus < expected.gpus and now.gpus >= node.expected_gpus:
        reasons.append(f"{now.gpus} of {expected.gpus} GPUs present at first connection")
    reasons.extend(_missing_ports(expected.ports, set(now.ports)))
    changed = [
        f"GPU {i} {now.nvlink[i]} active (was {was})"
        for i, was in enumerate(expected.nvlink)
        if i < len(now.nvlink) and was is not None and now.nvlink[i] not in (None, was)
    ]
    if changed:
        reasons.append("NVLink mask changed: " + ", ".join(changed))
    return tuple(reasons)


def _missing_ports(expected: Iterable[str], present: set[str]) -> list[str]:
    missing = [name for name in expected if name not in present]
    devices = {name.split("/")[0] for name in present}
    out, seen = [], set()
    for name in missing:
        device = name.split("/")[0]
        if device in devices:
            out.append(f"{name} missing")
        elif device not in seen:
            seen.add(device)
            out.append(f"{device} missing")
    return out


@dataclass(slots=True)
class _NodeDrift:
    reasons: tuple[str, ...] = ()
    effective: NodeState | None = None  # the state this module last reported while it acted
    since: float | None = None
    read: tuple[object, ...] = ()  # the inventory the reasons were read from
    briefs: tuple[object, ...] = ()  # the briefs ``read`` was taken from (same object: same)


@dataclass(slots=True)
class _Serial:
    failures: int = 0  # failure episodes seen for this serial (across restarts)
    failing: bool = False
    first_at: float | None = None


@dataclass(slots=True)
class DriftTracker:
    """Expected inventories, drift reasons, swaps and repeat offenders of a fleet."""

    store: Path | None = None
    expected: dict[str, Inventory] = field(default_factory=dict)
    serials: dict[str, _Serial] = field(default_factory=dict)
    # Per node, then GPU index: a (node, index) key tuple per GPU was ~0.5 MiB at 1,000 nodes.
    _identity: dict[str, dict[int, tuple[str, str | None]]] = field(default_factory=dict)
    _briefs: dict[str, tuple[GpuBrief, ...]] = field(default_factory=dict)
    _drift: dict[str, _NodeDrift] = field(default_factory=dict)
    _dirty: bool = False  # something known changed: written this tick
    _sighted: bool = False  # only first sightings since the last write
    _saved_at: float = float("-inf")
    _identities: dict[str, tuple[object, ...]] = field(default_factory=dict)
    _flagged: dict[str, str] = field(default_factory=dict)  # failing offender -> reason
    # Per node, the boot id and machine id of its latest hello (kept across restarts).
    _boots: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.store is not None:
            self._load(self.store)

    def apply(self, snapshot: FleetSnapshot) -> FleetSnapshot:
        """``snapshot`` with drift reasons and states, swap and repeat-offender events."""
        at, changed = snapshot.taken_at, False
        events: list[EventRecord] = []
        nodes: list[NodeSnapshot] = []
        transitions = list(snapshot.transitions)
        for node in snapshot.nodes:
            boot = self._boot_event(node, at)
            if boot is not None:
                events.append(boot)
            briefs = node.gpu_briefs  # the state's same object while no GPU changed
            if self._briefs.get(node.name) is not briefs:
                self._briefs[node.name] = briefs
                # Flat: one tuple kept per node, not one per GPU (4 fields each).
                identity = tuple(chain.from_iterable(map(_IDENTITY_KEY, briefs)))
                if self._identities.get(node.name) != identity:  # seldom: GPU by GPU
                    self._identities[node.name] = identity
                    replaced = boot is not None and boot.kind == "node_replaced"
                    events.extend(self._identity_events(node, at, replaced))
            judged, transition = self._judge(node, at)
            if self._flagged:
                judged = self._flag_offenders(judged)
            if judged is not node:
                transitions = [t for t in transitions if t.node != node.name]
            if transition is not None:
                transitions.append(transition)
            nodes.append(judged)
            changed |= judged is not node
        self._sighted |= self._learn(snapshot.nodes)
        if self._dirty or (self._sighted and at - self._saved_at >= FIRST_SIGHTINGS_SAVE_S):
            self._save(at)
        if not changed and not events:
            return snapshot
        return replace(
            snapshot,
            nodes=tuple(nodes) if changed else snapshot.nodes,
            transitions=tuple(transitions),
            new_events=snapshot.new_events + tuple(events),
        )

    # -- drift as node state ----------------------------------------------------------

    def _judge(self, node: NodeSnapshot, at: float) -> tuple[NodeSnapshot, NodeTransition | None]:
        drift = self._drift.setdefault(node.name, _NodeDrift())
        expected = self.expected.get(node.name)
        if node.status == "streaming" and expected is not None:
            ports, gpus = node.port_briefs, node.gpu_briefs
            seen = drift.briefs
            # The state hands out the same brief tuples while no link or GPU changed.
            if not seen or seen[0] is not ports or seen[1] is not gpus:
                drift.briefs = (ports, gpus)
                key = (node.expected_gpus, tuple(map(_NAME, ports)), tuple(map(_LINKS, gpus)))
                if key != drift.read:
                    drift.reasons, drift.read = drift_reasons(expected, node), key
        if not drift.reasons or node.state == "unreachable":
            return self._release(node, drift, at)
        state: NodeState = "broken"
        reasons = (*node.broken_reasons, *drift.reasons)
        transition = None
        if drift.effective != state:
            since = at if node.state == "up" else (node.state_since or at)
            drift.effective, drift.since = state, since
            transition = NodeTransition(node.name, state, since, reasons)
        return evolve(
            node, state=state, broken_reasons=reasons, state_since=drift.since
        ), transition

    @staticmethod
    def _release(
        node: NodeSnapshot, drift: _NodeDrift, at: float
    ) -> tuple[NodeSnapshot, NodeTransition | None]:
        if drift.effective is None:
            return node, None
        drift.effective = drift.since = None
        if node.state == "broken":
            return node, None  # still broken for its own reasons: the interval continues
        node = evolve(node, state_since=at)
        return node, NodeTransition(node.name, node.state, at, node.broken_reasons)

    def _learn(self, nodes: Iterable[NodeSnapshot]) -> bool:
        dirty = False
        for node in nodes:
            if node.name not in self.expected and _healthy(node):
                self.expected[node.name] = Inventory.of(node)
                dirty = True
        return dirty

    # -- GPU identity: swaps and repeat offenders ----------------------------------------

    # -- the node's own identity: reboots and replacements -------------------------------

    def _boot_event(self, node: NodeSnapshot, at: float) -> EventRecord | None:
        """``reboot`` when the node's boot id changed, ``node_replaced`` when its machine
        id did (a replaced machine has booted too: one event says it)."""
        now = (node.boot_id, node.machine_id)
        before = self._boots.get(node.name)
        if now == before or now == (None, None):
            return None  # most ticks; or an agent that cannot say (old, unreadable)
        if before is None:
            self._boots[node.name] = now
            self._sighted = True
            return None
        # An id that could not be read this time is no evidence: keep the last one known.
        kept = (now[0] or before[0], now[1] or before[1])
        if kept == before:
            return None
        self._boots[node.name] = kept
        self._dirty = True
        if before[1] is not None and kept[1] != before[1]:
            detail = f"machine id {before[1]} -> {kept[1]}"
            return EventRecord(at, node.name, "node_replaced", None, None, None, detail)
        if before[0] is not None and kept[0] != before[0]:
            detail = f"boot id {before[0]} -> {kept[0]}"
            return EventRecord(at, node.name, "reboot", None, None, None, detail)
        return None

    def _identity_events(
        self, node: NodeSnapshot, at: float, replaced: bool = False
    ) -> list[EventRecord]:
        events = []
        seen = self._identity.setdefault(node.name, {})
        compared = swapped = 0
        for gpu in node.gpu_briefs:
            if not gpu.uuid:
                continue  # a GPU lost before the agent started: no identity to compare
            ident = (gpu.uuid, gpu.serial)
            before = seen.get(gpu.index)
            if before != ident:
                seen[gpu.index] = ident
                # Slots are remembered, so a swap while we were down counts.
                if before is None:
                    self._sighted = True
                else:
                    self._dirty = True
            compared += before is not None
            if before is not None and _swapped(before, ident):
                swapped += 1
                events.append(_swap(node.name, gpu, before, at))
                gone = self.serials.get(before[1] or before[0])
                if gone is not None and gone.failing:
                    gone.failing = False  # swapped out: that failure episode is over
                    self._dirty = True
            offender = self._serial_event(node.name, gpu, at)
            if offender is not None:
                events.append(offender)
        # The machine id already said so (``_boot_event``): one node_replaced, not two.
        if swapped >= 2 and swapped == compared == len(seen) and not replaced:
            detail = f"every GPU serial changed ({swapped} of {swapped})"
            events.insert(0, EventRecord(at, node.name, "node_replaced", None, None, None, detail))
        return events

    def _serial_event(self, node: str, gpu: GpuBrief, at: float) -> EventRecord | None:
        serial = gpu.serial or gpu.uuid
        if gpu.verdict not in FAILED and gpu.verdict not in HEALTHY:
            return None  # unknown: neither a new failure nor evidence that one ended
        failing = gpu.verdict in FAILED
        record = self.serials.get(serial)
        if record is None:
            if not failing:
                return None  # never seen failing: nothing to remember (most GPUs)
            record = self.serials[serial] = _Serial()
        if failing == record.failing:
            return None
        record.failing = failing
        self._dirty = True
        if not failing:
            self._flagged.pop(serial, None)
            return None
        record.failures += 1
        record.first_at = record.first_at or at
        if record.failures < 2:
            return None
        self._flagged[serial] = f"repeat offender: serial {serial}, failure {record.failures}"
        detail = (
            f"GPU {gpu.index} (serial {serial}) failed again after a reset or swap: "
            f"failure {record.failures}"
        )
        return EventRecord(
            at, node, "repeat_offender", gpu.index, gpu.uuid, record.failures, detail
        )

    def _flag_offenders(self, node: NodeSnapshot) -> NodeSnapshot:
        """A failing repeat offender says so among its GPU's reasons."""
        if not any(
            (g.serial or g.uuid) in self._flagged and g.verdict in FAILED for g in node.gpu_briefs
        ):
            return node
        gpus = tuple(
            replace(g, reasons=(*g.reasons, self._flagged[serial]))
            if (serial := g.serial or g.uuid) in self._flagged and g.verdict in FAILED
            else g
            for g in node.gpus
        )
        if all(a is b for a, b in zip(gpus, node.gpus, strict=True)):
            return node
        return evolve(node, gpus=gpus)

    def offenders(self) -> dict[str, int]:
        """Serials that failed more than once, with their failure counts."""
        return {s: r.failures for s, r in self.serials.items() if r.failures >= 2}

    # -- persistence -----------------------------------------------------------------

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for name, inv in data.get("expected", {}).items():
                nvlink = tuple(None if v is None else int(v) for v in inv["nvlink"])
                self.expected[str(name)] = Inventory(int(inv["gpus"]), tuple(inv["ports"]), nvlink)
            failing = set(data.get("failing", []))
            for serial, failures in data.get("failures", {}).items():
                record = _Serial(int(failures), serial in failing)
                self.serials[str(serial)] = record
                if record.failing and record.failures >= 2:
                    self._flagged[str(serial)] = (
                        f"repeat offender: serial {serial}, failure {record.failures}"
                    )
            for name, (boot, machine) in data.get("boots", {}).items():
                self._boots[str(name)] = (_id_or_none(boot), _id_or_none(machine))
            for name, slots in data.get("slots", {}).items():
                self._identity[str(name)] = {
                    int(index): (str(uuid), None if serial is None else str(serial))
                    for index, (uuid, serial) in slots.items()
                }
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s unreadable (%s): expected inventories start afresh", path, exc)

    def flush(self) -> None:
        """Write what was first seen and not yet written (the runtime's stop calls it)."""
        if self._dirty or self._sighted:
            self._save(self._saved_at)

    def _save(self, at: float) -> None:
        self._dirty = self._sighted = False
        self._saved_at = at
        if self.store is None:
            return
        data = {
            "expected": {
                name: {"gpus": inv.gpus, "ports": list(inv.ports), "nvlink": list(inv.nvlink)}
                for name, inv in sorted(self.expected.items())
            },
            "failures": {s: r.failures for s, r in sorted(self.serials.items()) if r.failures},
            # A GPU failing at shutdown that still fails at start is the same failure.
            "failing": sorted(s for s, r in self.serials.items() if r.failing),
            "slots": {
                name: {str(i): list(ident) for i, ident in sorted(slots.items())}
                for name, slots in sorted(self._identity.items())
            },
            "boots": {name: list(ids) for name, ids in sorted(self._boots.items())},
        }
        tmp = self.store.with_suffix(".tmp")
        try:
            # No indent: the C encoder (15 ms at 1,000 nodes, against 85 ms indented).
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, self.store)
        except OSError as exc:
            log.warning("cannot write %s: %s", self.store, exc)


def _id_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _healthy(node: NodeSnapshot) -> bool:
    return (
        node.status == "streaming"
        and node.state == "up"
        and bool(node.gpu_briefs)
        and all(g.verdict != "unknown" for g in node.gpu_briefs)
        and all(p.verdict != "unknown" for p in node.port_briefs)
    )


def _swapped(before: tuple[str, str | None], now: tuple[str, str | None]) -> bool:
    # A serial that failed to read is no evidence: compare what both readings have.
    if before[1] and now[1]:
        return before[1] != now[1]
    return before[0] != now[0]


def _swap(node: str, gpu: GpuBrief, before: tuple[str, str | None], at: float) -> EventRecord:
    old_uuid, old_serial = before
    if gpu.serial and old_serial and gpu.serial != old_serial:
        what = f"serial {old_serial} -> {gpu.serial}"
    else:
        what = f"UUID {old_uuid} -> {gpu.uuid}"
    return EventRecord(at, node, "gpu_swap", gpu.index, gpu.uuid, None, f"GPU {gpu.index}: {what}")
