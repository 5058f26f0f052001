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

from fleet.facade import (
    CONNECTED_STATUSES,
    GPU_FIELDS,
    VERDICT_RANK,
    GpuColumns,
    NodeSnapshot,
    Verdict,
    expand_hosts,
    matches_job,
    matches_user,
)
from tui.delivery_terms import DeliveryTerms, dev_predicate, has_idle_gpu
from tui.node_facts import GpuFacts, gpu_facts, nic_facts, port_facts
from tui.tick_columns import MemoryTotals, column_mem_pct

SortKey = Literal["name", "health", "utilization", "memory", "power", "temp"]
SORT_KEYS: tuple[SortKey, ...] = ("name", "utilization", "health", "memory", "power", "temp")
STATE_WORDS = ("broken", "warn", "unreachable", "up", "connecting", "idle")
PROBE_WORDS = ("slow", "straggler", "fail", "pass", "any")
PROBE_FLAGGED = frozenset(("slow", "straggler", "fail"))
FILTER_HELP = (
    "terms: node-[001-004]  name  state:broken|warn|unreachable|up|connecting|idle  "
    "why:TEXT  gpu:N  probe:slow|straggler|fail|any  "
    "dev:[power|pcie|memory|nvlink|model|gpus|driver|network]  job:ID|NAME  user:NAME"
)


CONNECTING_STATUSES = frozenset(("connecting", "streaming", "stale"))


def is_connecting(node: NodeSnapshot) -> bool:
    """Never sampled yet: still connecting, neither broken nor unreachable.

    The domain calls such a node ``unreachable`` ("no sample yet"); the transport's status
    tells them apart: ``connecting`` until the first session, then ``streaming`` or (on a
    slow start) ``stale`` with no GPU known, between the agent's start and its first
    sample. A transport failure (refused, auth, host key) is not connecting.
    """
    if node.status == "connecting":
        return True
    if node.status not in CONNECTING_STATUSES or node.state != "unreachable":
        return False
    return not gpu_facts(node)


def connecting_reason(node: NodeSnapshot) -> str:
    """What a connecting node is waiting for, in words."""
    if node.status == "connecting":
        return node.status_reason or "connecting"
    return "connected, waiting for the agent's first sample"


def gpu_problem(gpu: GpuFacts) -> str:
    """Why one GPU is not plainly ok (verdict reasons, then a probe's finding), or ""."""
    parts: list[str] = []
    if gpu.verdict not in ("ok", "unknown"):
        parts.append("; ".join(gpu.reasons) or gpu.verdict)
    if gpu.probe_verdict in PROBE_FLAGGED:
        parts.append(f"probe: {gpu.probe_verdict}")
    return "; ".join(parts)


def _mentions(reasons: list[str], subject: str) -> bool:
    """Whether a reason already speaks of ``subject`` ("GPU 5", "mlx5_3")."""
    return any(r == subject or r.startswith((subject + " ", subject + ":")) for r in reasons)


def node_why(node: NodeSnapshot) -> str:
    """Why a node is not plainly up: broken reasons, the connection's reason, or the
    problems of its GPUs and ports (thermal, NVLink, probe findings) for a node in warn.
    Each GPU or port is named once."""
    if is_connecting(node):
        return connecting_reason(node)
    reasons = list(node.broken_reasons)
    if node.status != "streaming" and not reasons:
        reasons.append(node.status_reason or node.status)
    for g in gpu_facts(node):
        problem = gpu_problem(g)
        subject = f"GPU {g.index}"
        if problem and not _mentions(reasons, subject):
            reasons.append(f"{subject}: {problem}")
    for p in (*port_facts(node), *nic_facts(node)):
        if p.verdict in ("warn", "fail") and not _mentions(reasons, p.name):
            text = "; ".join(p.reasons) or p.verdict
            # The health rules name the port in their reasons already: name it once.
            reasons.append(text if text.startswith(p.name + " ") else f"{p.name}: {text}")
    return "; ".join(reasons)


@dataclass(frozen=True, slots=True)
class NodeFigures:
    """A node's telemetry figures, read from its GPU objects."""

    util: float | None  # mean GPU utilization, percent
    power_w: float | None  # sum over GPUs
    hottest_c: float | None
    mem_pct: float | None  # GPU memory in use over the node, percent


NO_FIGURES = NodeFigures(None, None, None, None)


def node_figures(node: NodeSnapshot) -> NodeFigures:
    """Utilization, power, temperature and memory of ``node`` (reads its GPU objects)."""
    gpus = node.gpus
    utils = [g.util_gpu for g in gpus if g.util_gpu is not None]
    powers = [g.power_w for g in gpus if g.power_w is not None]
    temps = [g.temp_c for g in gpus if g.temp_c is not None]
    used = [g.mem_used_bytes for g in gpus if g.mem_used_bytes is not None]
    total = sum(g.memory_total_bytes or 0 for g in gpus if g.mem_used_bytes is not None)
    return NodeFigures(
        util=sum(utils) / len(utils) if utils else None,
        power_w=sum(powers) if powers else None,
        hottest_c=max(temps) if temps else None,
        mem_pct=100.0 * sum(used) / total if used and total else None,
    )


_UTIL, _POWER, _TEMP = (GPU_FIELDS.index(f) for f in ("util_gpu", "power_w", "temp_c"))


def column_figures(node: NodeSnapshot, columns: GpuColumns | None) -> NodeFigures | None:
    """Utilization, power and temperature from the tick's columns (no GPU object built);
    None when the node is not backed by the state's rows. ``mem_pct`` is left None: the
    memory total is no column (the summary reads it from the objects when asked)."""
    rows = node.rows
    if columns is None or rows is None:
        return None
    block = columns.fast[rows.gpu_start : rows.gpu_start + node.gpu_count]
    # Python floats summed in GPU order: the figure the objects give, to the bit.
    utils = [v for v in block[:, _UTIL].tolist() if v == v]
    powers = [v for v in block[:, _POWER].tolist() if v == v]
    temps = [v for v in block[:, _TEMP].tolist() if v == v]
    return NodeFigures(
        util=sum(utils) / len(utils) if utils else None,
        power_w=sum(powers) if powers else None,
        hottest_c=max(temps) if temps else None,
        mem_pct=None,
    )


class NodeSummary:
    """What the grid needs of one node besides its cells.

    Health (worst verdict, unhealthy GPUs, a warning) comes from the node's facts; the
    figures on first use, from the tick's columns where the node has rows (else from its
    GPU objects), so a tick that counts, filters, sorts or draws never builds a node's
    GPU objects for it.
    """

    __slots__ = (
        "_columns",
        "_figures",
        "_mem",
        "_node",
        "_totals",
        "has_warn",
        "unhealthy",
        "worst",
    )

    def __init__(
        self,
        worst: Verdict,
        unhealthy: int,
        has_warn: bool,
        *,
        node: NodeSnapshot | None = None,
        figures: NodeFigures | None = None,
        columns: GpuColumns | None = None,
        totals: MemoryTotals | None = None,
    ) -> None:
        self.worst = worst  # worst GPU or port verdict
        self.unhealthy = unhealthy  # expected GPUs not ok/warn
        self.has_warn = has_warn
        self._node = node
        self._figures = figures if figures is not None or node is not None else NO_FIGURES
        self._columns = columns
        self._totals = totals
        self._mem: tuple[float | None] | None = None

    @property
    def columns(self) -> GpuColumns | None:
        """The tick's GPU columns the node's cells and figures are read from (None: objects)."""
        return self._columns

    @property
    def figures(self) -> NodeFigures:
        if self._figures is None:
            assert self._node is not None
            from_columns = column_figures(self._node, self._columns)
            if from_columns is None:
                self._figures = node_figures(self._node)
            else:
                self._figures, self._mem = from_columns, None
        return self._figures

    @property
    def util(self) -> float | None:
        return self.figures.util

    @property
    def power_w(self) -> float | None:
        return self.figures.power_w

    @property
    def hottest_c(self) -> float | None:
        return self.figures.hottest_c

    @property
    def mem_pct(self) -> float | None:
        figures = self.figures
        if self._columns is None or self._node is None or self._node.rows is None:
            return figures.mem_pct
        if self._mem is None:  # the memory totals are read from the objects once a session
            totals = self._totals if self._totals is not None else MemoryTotals()
            self._mem = (column_mem_pct(self._node, self._columns, totals),)
        return self._mem[0]

    def _key(self) -> tuple[object, ...]:
        f = self.figures
        return (
            self.worst,
            self.unhealthy,
            self.has_warn,
            f.util,
            f.power_w,
            f.hottest_c,
            self.mem_pct,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeSummary) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"NodeSummary{self._key()!r}"


def summarize(
    node: NodeSnapshot, columns: GpuColumns | None = None, totals: MemoryTotals | None = None
) -> NodeSummary:
    """The node's health from its facts; its figures when first asked for (``totals``:
    the GPUs' memory totals kept across ticks)."""
    gpus = gpu_facts(node)
    verdicts = [g.verdict for g in gpus] + [p.verdict for p in port_facts(node)]
    probe_flags = any(g.probe_verdict in PROBE_FLAGGED for g in gpus)
    worst: Verdict = max(verdicts, key=VERDICT_RANK.__getitem__, default="unknown")
    if len(gpus) < node.expected_gpus:
        worst = "lost"
    healthy = sum(1 for g in gpus if g.verdict in ("ok", "warn"))
    return NodeSummary(
        worst,
        max(node.expected_gpus, len(gpus)) - healthy,
        "warn" in verdicts or probe_flags,
        node=node,
        columns=columns,
        totals=totals,
    )


class SummaryCache:
    """NodeSummary per node object, computed on first use (only visible rows, unless a sort
    or filter needs them all); summaries of nodes that were not current are dropped."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[NodeSnapshot, NodeSummary]] = {}
        self._previous: dict[int, tuple[NodeSnapshot, NodeSummary]] = {}
        self._columns: GpuColumns | None = None
        self._totals = MemoryTotals()

    def refresh(self, columns: GpuColumns | None = None) -> None:
        """A new tick (``columns``: its GPU readings): summaries used last tick carry over
        for node objects that did not change; the rest are forgotten."""
        self._previous, self._by_id = self._by_id, {}
        self._columns = columns
        self._totals.next_tick()

    def get(self, node: NodeSnapshot) -> NodeSummary:
        key = id(node)
        hit = self._by_id.get(key)
        if hit is None or hit[0] is not node:
            hit = self._previous.get(key)
            if hit is None or hit[0] is not node:
                hit = (node, summarize(node, self._columns, self._totals))
            self._by_id[key] = hit
        return hit[1]


NodePredicate = Callable[[NodeSnapshot, NodeSummary], bool]


def _state_matches(
    word: str, node: NodeSnapshot, summary: NodeSummary, terms: DeliveryTerms
) -> bool:
    if word == "idle":
        return has_idle_gpu(node, terms.working_floor_percent)
    if word == "connecting":
        return is_connecting(node)
    if is_connecting(node):
        return False
    if word == "broken":
        return node.state == "broken"
    if word == "unreachable":
        return node.state == "unreachable" or node.status not in ("streaming", "connecting")
    if word == "warn":
        return node.state == "up" and summary.has_warn
    return node.state == "up"  # "up"


def parse_filter(text: str, terms: DeliveryTerms | None = None) -> NodePredicate:
    """A predicate for the filter box. Terms separated by spaces must all hold.

    A term is ``state:broken|warn|unreachable|up|connecting|idle`` (idle: a GPU below
    the contract's working floor that no one else's process holds), ``why:TEXT`` (a
    substring of the node's reasons), ``gpu:N`` (GPU N is not ok),
    ``probe:slow|straggler|fail|any`` (a GPU the last probe flagged), ``dev:`` or
    ``dev:power|pcie|memory|nvlink|model|gpus|driver|network`` (the node or a GPU of
    it deviates from the contract: ``terms``),
    ``job:ID|NAME`` (a scheduler job on the node: its id or pod UID, or a part of its
    name), ``user:NAME`` (a job of that user on the node), a hostlist
    expression (``node-[001-004]``, ``a,b``: exact names), or a case-insensitive
    substring of the name.
    Raises ValueError, in words, when a term cannot be understood.
    """
    known = terms if terms is not None else DeliveryTerms()
    preds: list[NodePredicate] = [_term(t, known) for t in text.split()]
    return lambda n, s: all(p(n, s) for p in preds)


def _words(term: str, prefix: str, allowed: tuple[str, ...]) -> list[str]:
    words = [w for w in term[len(prefix) :].lower().split("|") if w]
    bad = [w for w in words if w not in allowed]
    if bad or not words:
        shown = ", ".join(bad) if bad else "nothing"
        raise ValueError(f"unknown {prefix[:-1]} {shown} in {term}; use {'|'.join(allowed)}")
    return words


def _gpu_term(term: str) -> NodePredicate:
    text = term[4:]
    if not text.isdigit():
        raise ValueError(f"{term}: gpu: takes a GPU index, e.g. gpu:7")
    index = int(text)

    def bad_gpu(n: NodeSnapshot, s: NodeSummary) -> bool:
        gpus = gpu_facts(n)
        if index >= max(n.expected_gpus, len(gpus)):
            return False
        gpu = next((g for g in gpus if g.index == index), None)
        return gpu is None or bool(gpu_problem(gpu))

    return bad_gpu


def _job_term(term: str) -> NodePredicate:
    """``job:ID|NAME`` or ``user:NAME``, matched against the jobs on the node's GPUs;
    ``|`` separates alternatives, as in the other terms (``job:4242|5150``)."""
    prefix, _, text = term.partition(":")
    wanted = [w for w in text.split("|") if w]
    if prefix.lower() == "job":
        if not wanted:
            raise ValueError("job: needs a job id or name, e.g. job:4242")
        return lambda n, s: any(matches_job(n.jobs, w) for w in wanted)
    if not wanted:
        raise ValueError("user: needs a user name, e.g. user:alice")
    return lambda n, s: any(matches_user(n.jobs, w) for w in wanted)


def _probe_matches(words: list[str], node: NodeSnapshot) -> bool:
    found = {g.probe_verdict for g in gpu_facts(node) if g.probe_verdict is not None}
    if "any" in words:
        return bool(found & PROBE_FLAGGED)
    return bool(found & set(words))


def _term(term: str, terms: DeliveryTerms) -> NodePredicate:
    lower = term.lower()
    if lower.startswith("state:"):
        words = _words(term, "state:", STATE_WORDS)
        return lambda n, s: any(_state_matches(w, n, s, terms) for w in words)
    if lower.startswith("dev:"):
        deviates = dev_predicate(term, terms)
        return lambda n, s: deviates(n)
    if lower.startswith(("job:", "user:")):
        return _job_term(term)
    if lower.startswith("why:"):
        needle = lower[4:]
        if not needle:
            raise ValueError("why: needs some text, e.g. why:xid or why:thermal")
        return lambda n, s: needle in node_why(n).lower()
    if lower.startswith("gpu:"):
        return _gpu_term(lower)
    if lower.startswith("probe:"):
        probe_words = _words(term, "probe:", PROBE_WORDS)
        return lambda n, s: _probe_matches(probe_words, n)
    if ":" in term and not looks_like_hostlist(term):
        raise ValueError(f"unknown filter term {term}; {FILTER_HELP}")
    if looks_like_hostlist(term):
        # The domain's expander: its InventoryError is the ValueError a bad filter raises.
        names = frozenset(expand_hosts([term]))
        return lambda n, s: n.name in names
    needle = term.lower()
    return lambda n, s: needle in n.name.lower()


def looks_like_hostlist(term: str) -> bool:
    """A filter term with brackets or commas names hosts (``node-[001-004],node-9``)."""
    return "[" in term or "," in term


_DIGITS = re.compile(r"(\d+)")


@lru_cache(maxsize=65536)
def natural_key(name: str) -> tuple[object, ...]:
    """gpu-2 before gpu-10."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))


def _health_key(node: NodeSnapshot, cache: SummaryCache) -> tuple[int, int, int, int]:
    state_rank = {"unreachable": 0, "broken": 1, "up": 2}
    summary = cache.get(node)
    # Connecting nodes are not in trouble: after the up nodes with a warning.
    rank = 3 if is_connecting(node) else state_rank[node.state]
    return (rank, -summary.unhealthy, -VERDICT_RANK[summary.worst], -summary.has_warn)


def has_live_data(node: NodeSnapshot) -> bool:
    """Streaming or briefly stale: the GPU values mean something. Otherwise show none."""
    return node.state != "unreachable" and node.status in CONNECTED_STATUSES


def _figure(key: SortKey, node: NodeSnapshot, cache: SummaryCache) -> float | None:
    if not has_live_data(node):
        return None  # drawn as N/A, so sorted with the N/As
    summary = cache.get(node)
    if key == "utilization":
        return summary.util
    if key == "memory":
        return summary.mem_pct
    if key == "power":
        return summary.power_w
    return summary.hottest_c


def sort_nodes(
    nodes: Sequence[NodeSnapshot], key: SortKey, cache: SummaryCache, reverse: bool = False
) -> list[NodeSnapshot]:
    """Nodes in display order: by name, worst health first, or a figure (utilization,
    memory, power, temperature) highest first; ``reverse`` turns the order around. Nodes
    without the figure go last either way; ties keep name order."""
    by_name = sorted(nodes, key=lambda n: natural_key(n.name), reverse=reverse and key == "name")
    if key == "name":
        return by_name
    if key == "health":
        return sorted(by_name, key=lambda n: _health_key(n, cache), reverse=reverse)
    known = [(f, n) for n in by_name if (f := _figure(key, n, cache)) is not None]
    missing = [n for n in by_name if _figure(key, n, cache) is None]
    known.sort(key=lambda fn: fn[0], reverse=not reverse)
    return [n for _, n in known] + missing
