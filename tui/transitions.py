"""Broken intervals of a node from the transitions the dashboard has seen (bounded)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from fleet.facade import FleetSnapshot, NodeSnapshot

KEEP_PER_NODE = 50


@dataclass(frozen=True, slots=True)
class SeenTransition:
    state: str
    at: float
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BrokenInterval:
    state: str  # broken | unreachable
    start: float | None
    end: float | None  # None: still going on
    reasons: tuple[str, ...]


class TransitionLog:
    """Node state transitions carried by the snapshots, newest KEEP_PER_NODE per node."""

    def __init__(self) -> None:
        self._by_node: dict[str, deque[SeenTransition]] = {}

    def record(self, snapshot: FleetSnapshot) -> None:
        for t in snapshot.transitions:
            log = self._by_node.setdefault(t.node, deque(maxlen=KEEP_PER_NODE))
            log.append(SeenTransition(t.state, t.at, t.reasons))

    def of(self, node: str) -> list[SeenTransition]:
        return list(self._by_node.get(node, ()))


def broken_intervals(node: NodeSnapshot, seen: list[SeenTransition]) -> list[BrokenInterval]:
    """Intervals the node was broken or unreachable, newest first.

    From the transitions seen, closed by the next transition; the current state (from
    ``state``/``state_since``/``broken_reasons``) is the open interval when it is not up.
    """
    ordered = sorted(seen, key=lambda s: s.at)
    out: list[BrokenInterval] = []
    nexts: list[SeenTransition | None] = [*ordered[1:], None] if ordered else []
    for cur, nxt in zip(ordered, nexts, strict=True):
        if cur.state == "up":
            continue
        end = nxt.at if nxt is not None else None
        if end is None and node.state == "up":
            continue  # left that state before we saw the way out; shown by state below
        out.append(BrokenInterval(cur.state, cur.at, end, cur.reasons))
    open_now = any(i.end is None for i in out)
    if node.state != "up" and not open_now:
        out.append(BrokenInterval(node.state, node.state_since, None, node.broken_reasons))
    out.sort(key=lambda i: -(i.start or 0.0))
    return out
