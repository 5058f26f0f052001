"""Per-node figures the dashboard sorts, filters and draws by, cached by node identity.

``FleetState`` hands out the same ``NodeSnapshot`` object for a node that did not
change, so ``SummaryCache`` recomputes only nodes that are new objects this tick.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from fleet.facade import VERDICT_RANK, NodeSnapshot, Verdict
from tui.hostlist import HostlistError, expand, looks_like_hostlist

SortKey = Literal["name", "utilization", "health"]
SORT_KEYS: tuple[SortKey, ...] = ("name", "utilization", "health")
STATE_WORDS = ("broken", "warn", "unreachable", "up", "connecting")


@dataclass(frozen=True, slots=True)
class NodeSummary:
    """What the grid needs of one node besides its cells."""

    util: float | None  # mean GPU utilization, percent
    power_w: float | None  # sum over GPUs
    hottest_c: float | None
    worst: Verdict  # worst GPU or port verdict
    unhealthy: int  # expected GPUs not ok/warn
    has_warn: bool


def summarize(node: NodeSnapshot) -> NodeSummary:
    utils = [g.util_gpu for g in node.gpus if g.util_gpu is not None]
    powers = [g.power_w for g in node.gpus if g.power_w is not None]
    temps = [g.temp_c for g in node.gpus if g.temp_c is not None]
    verdicts = [g.verdict for g in node.gpus] + [p.verdict for p in node.ports]
    worst: Verdict = max(verdicts, key=VERDICT_RANK.__getitem__, default="unknown")
    if len(node.gpus) < node.expected_gpus:
        worst = "lost"
    return NodeSummary(
        util=sum(utils) / len(utils) if utils else None,
        power_w=sum(powers) if powers else None,
        hottest_c=max(temps) if temps else None,
        worst=worst,
        unhealthy=max(node.expected_gpus, len(node.gpus)) - node.healthy_gpus,
        has_warn="warn" in verdicts,
    )


class SummaryCache:
    """NodeSummary per node object, computed on first use (only visible rows, unless a sort
    or filter needs them all); summaries of nodes that were not current are dropped."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[NodeSnapshot, NodeSummary]] = {}
        self._previous: dict[int, tuple[NodeSnapshot, NodeSummary]] = {}

    def refresh(self) -> None:
        """A new tick: summaries used last tick carry over for node objects that did not
        change; the rest are forgotten."""
        self._previous, self._by_id = self._by_id, {}

    def get(self, node: NodeSnapshot) -> NodeSummary:
        key = id(node)
        hit = self._by_id.get(key)
        if hit is None or hit[0] is not node:
            hit = self._previous.get(key)
            if hit is None or hit[0] is not node:
                hit = (node, summarize(node))
            self._by_id[key] = hit
        return hit[1]


NodePredicate = Callable[[NodeSnapshot, NodeSummary], bool]


def _state_matches(word: str, node: NodeSnapshot, summary: NodeSummary) -> bool:
    if word == "broken":
        return node.state == "broken"
    if word == "unreachable":
        return node.state == "unreachable" or node.status not in ("streaming", "connecting")
    if word == "warn":
        return node.state == "up" and summary.has_warn
    if word == "connecting":
        return node.status == "connecting"
    return node.state == "up"  # "up"


def parse_filter(text: str) -> NodePredicate:
    """A predicate for the filter box. Terms separated by spaces must all hold.

    A term is ``state:broken|warn|unreachable|up|connecting``, a hostlist expression
    (``node-[001-004]``, ``a,b``: exact names), or a case-insensitive substring.
    Raises ValueError when a term cannot be understood.
    """
    preds: list[NodePredicate] = [_term(t) for t in text.split()]
    return lambda n, s: all(p(n, s) for p in preds)


def _term(term: str) -> NodePredicate:
    if term.lower().startswith("state:"):
        words = [w for w in term[6:].lower().split("|") if w]
        bad = [w for w in words if w not in STATE_WORDS]
        if bad or not words:
            raise ValueError(f"unknown state {bad or term!r}; use {'|'.join(STATE_WORDS)}")
        return lambda n, s: any(_state_matches(w, n, s) for w in words)
    if looks_like_hostlist(term):
        try:
            names = frozenset(expand(term))
        except HostlistError as exc:
            raise ValueError(str(exc)) from exc
        return lambda n, s: n.name in names
    needle = term.lower()
    return lambda n, s: needle in n.name.lower()


_DIGITS = re.compile(r"(\d+)")


@lru_cache(maxsize=65536)
def natural_key(name: str) -> tuple[object, ...]:
    """gpu-2 before gpu-10."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


def sort_nodes(
    nodes: Sequence[NodeSnapshot], key: SortKey, cache: SummaryCache
) -> list[NodeSnapshot]:
    """Nodes in display order: by name, by utilization (busiest first), or worst health first."""
    by_name = sorted(nodes, key=lambda n: natural_key(n.name))
    if key == "utilization":
        return sorted(by_name, key=lambda n: -(cache.get(n).util or -1.0))
    if key == "health":
        state_rank = {"unreachable": 0, "broken": 1, "up": 2}
        return sorted(
            by_name,
            key=lambda n: (
                state_rank[n.state],
                -cache.get(n).unhealthy,
                -VERDICT_RANK[cache.get(n).worst],
            ),
        )
    return by_name
