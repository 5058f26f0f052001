"""Repair records: one per outage of a node, from first evidence to healthy again.

An outage is a run of a node's ``broken`` and ``unreachable`` intervals. ``unmonitored``
time inside the run (a controller restart, the monitor's own network) neither ends nor
splits it: the record spans the restart and counts the blind time it holds. The run ends
where the node is next ``up``; with no such interval the repair is still open.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence

from history.states import StateInterval
from ledger.repairs.evidence import Event, Evidence
from ledger.repairs.model import KIND_ORDER, Ack, Action, FailureClass, RepairKind, RepairRecord

BAD = frozenset(("broken", "unreachable"))
# Node-side actions the recorder writes as events (docs/health.md: how late each is seen).
ACTION_EVENTS: dict[str, RepairKind] = {
    "node_replaced": "node_replaced",
    "gpu_swap": "gpu_swap",
    "reboot": "reboot",
}
# An action is seen when the node streams again, which may be the very tick it is
# judged up, or the next slow read: this much after the end still belongs to the repair.
ACTION_SLACK_MS = 60_000
# The event that breaks a node is stamped when the node saw it; the interval starts at
# the controller's next tick. Causes this much before the start belong to the outage.
CAUSE_LEAD_MS = 10_000
_REASON_GPU = re.compile(r"^GPU (\d{1,5}):")
ECC_XIDS = frozenset((48, 63, 64, 92, 94, 95))
NVLINK_XIDS = frozenset((74,))
_SERIAL = re.compile(r"serial \S+ -> (\S+)")


def repair_records(evidence: Evidence) -> list[RepairRecord]:
    """Every outage in ``evidence`` as a repair record, by detection time then node."""
    by_node: dict[str, list[StateInterval]] = defaultdict(list)
    for interval in evidence.intervals:
        by_node[interval.node].append(interval)
    events: dict[str, list[Event]] = defaultdict(list)
    for event in evidence.events:
        events[event.node].append(event)
    records = []
    for node in sorted(by_node):
        for run, resolved, blind in outages(by_node[node], evidence.end_ms):
            records.append(_record(node, run, resolved, blind, events[node], evidence.acks))
    return sorted(records, key=lambda r: (r.detected_ms, r.node))


def outages(
    intervals: Sequence[StateInterval], end_ms: int
) -> Iterable[tuple[list[StateInterval], int | None, int]]:
    """(bad intervals, resolved_ms or None, unmonitored ms inside) for each outage."""
    run: list[StateInterval] = []
    blind = 0
    for interval in sorted(intervals, key=lambda i: i.start_ms):
        if interval.state in BAD:
            run.append(interval)
        elif interval.state == "unmonitored":
            if run:
                blind += min(interval.end_ms or end_ms, end_ms) - interval.start_ms
        elif run:  # up: the outage is over
            yield run, interval.start_ms, blind
            run, blind = [], 0
    if run:
        yield run, None, blind


def _record(
    node: str,
    run: list[StateInterval],
    resolved: int | None,
    blind: int,
    events: list[Event],
    acks: Sequence[Ack],
) -> RepairRecord:
    detected = run[0].start_ms
    end = resolved if resolved is not None else None
    first = detected - CAUSE_LEAD_MS
    # The node's events are in time order: take the outage's stretch, not all of them.
    events = _between(events, first, None if end is None else end + ACTION_SLACK_MS)
    inside = [e for e in events if end is None or e.at_ms <= end]
    actions = _actions(events, detected, end)
    reasons = tuple(dict.fromkeys(r for i in run for r in i.reasons))
    causes = [e for e in inside if e.kind not in ACTION_EVENTS]
    gpus = tuple(sorted({e.gpu for e in causes if e.gpu is not None} | _reason_gpus(reasons)))
    kind = _kind(actions, gpus, resolved)
    if kind == "gpu_reset" and resolved is not None:
        # A cleared XID with the same serial: the reset is seen as the GPU judged ok again.
        actions = (Action("gpu_reset", resolved, gpus[0], "fault cleared, same GPU"),)
    return RepairRecord(
        node=node,
        detected_ms=detected,
        resolved_ms=resolved,
        kind=kind,
        failure_class=failure_class(run, inside, reasons),
        gpus=gpus,
        serials=_identities(inside),
        reasons=reasons,
        ack=_ack_of(node, detected, resolved, acks),
        actions=actions,
        unmonitored_ms=blind,
    )


def _between(events: list[Event], lo: int, hi: int | None) -> list[Event]:
    """The events in ``[lo, hi]`` of ``events`` (in time order, as Evidence holds them)."""
    start = bisect_left(events, lo, key=lambda e: e.at_ms)
    stop = len(events) if hi is None else bisect_right(events, hi, key=lambda e: e.at_ms)
    return events[start:stop]


def _actions(events: list[Event], detected: int, end: int | None) -> tuple[Action, ...]:
    last = None if end is None else end + ACTION_SLACK_MS
    return tuple(
        Action(ACTION_EVENTS[e.kind], e.at_ms, e.gpu, e.detail)
        for e in events
        if e.kind in ACTION_EVENTS and detected <= e.at_ms and (last is None or e.at_ms <= last)
    )


def _kind(actions: tuple[Action, ...], gpus: tuple[int, ...], resolved: int | None) -> RepairKind:
    if resolved is None:
        return "open"
    if actions:
        return min((a.kind for a in actions), key=KIND_ORDER.index)
    return "gpu_reset" if gpus else "cleared"


def failure_class(
    run: Sequence[StateInterval], events: Sequence[Event], reasons: Sequence[str]
) -> FailureClass:
    """The component class an outage is counted in (docs/repairs.md, first match wins)."""
    if run[0].state == "unreachable":
        return "unreachable"
    codes = {e.code for e in events if e.kind == "xid" and e.code is not None}
    kinds = {e.kind for e in events}
    text = " ".join(reasons).lower()
    if codes & ECC_XIDS or "dbe" in kinds or "ecc" in text:
        return "ecc_uncorrectable"
    if codes & NVLINK_XIDS or "nvlink_down" in kinds or "nvlink" in text:
        return "nvlink"
    if codes or "gpu" in text or "lost" in text:
        return "gpu_xid"
    if kinds & {"link_down", "link_downed"} or "mlx" in text or "port" in text:
        return "network_link"
    return "gpu_xid"


def _identities(events: Sequence[Event]) -> tuple[str, ...]:
    """The failing hardware's identities: the UUIDs of GPU events (not swaps)."""
    return tuple(dict.fromkeys(e.uuid for e in events if e.uuid and e.kind not in ACTION_EVENTS))


def _ack_of(node: str, detected: int, resolved: int | None, acks: Sequence[Ack]) -> Ack | None:
    for ack in acks:
        if (
            ack.node == node
            and ack.at_ms >= detected
            and (resolved is None or ack.at_ms <= resolved)
        ):
            return ack
    return None


def _reason_gpus(reasons: Sequence[str]) -> set[int]:
    return {int(m.group(1)) for r in reasons if (m := _REASON_GPU.match(r))}


def new_serial(detail: str) -> str | None:
    """The serial a ``gpu_swap`` event's detail names as the new one."""
    match = _SERIAL.search(detail)
    return match.group(1) if match else None
