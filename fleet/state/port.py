"""One InfiniBand / RoCE / EFA port or Ethernet NIC as the fleet state tracks it.

Its counters live in the fleet's :class:`~fleet.state.port_columns.PortColumns` (one
slot per port); the track keeps what the health rules read (:class:`PortFacts`), the
verdict and the latest raw row, and is called back only when its facts may change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import msgspec

from collectors.agent.fields import IB_PHYS_STATES, IB_PORT_STATES
from collectors.protocol import PortInfo, Value
from fleet.health import Judgement, PortFacts
from fleet.model import PortBrief, Verdict
from fleet.state.kept import KeptCopies
from fleet.state.layout import FieldIndex, Row
from fleet.state.port_columns import PortColumns, RowPlan

# PMA data counters count octets divided by 4 (kernel sysfs ABI): bytes = value x 4.
IB_DATA_UNIT = 4
# Port and NIC fields that are states or rates, not counters.
_NOT_COUNTERS = frozenset(("state", "phys_state", "rate_gbps", "up", "speed_mbps"))


def _state_name(code: float, names: dict[int, str]) -> str | None:
    if code != code:  # NaN: not read
        return None
    return names.get(int(code), str(int(code)))


def _known(value: float) -> float | None:
    return None if value != value else value


# Healthy ports of a fleet have one facts key (ACTIVE, LinkUp, 400.0, no errors), and a
# port keeps its key until it changes: a tuple of fresh floats per port was ~1.5 MiB at
# 1,000 nodes.
_FACTS_KEYS: KeptCopies[tuple[object, ...]] = KeptCopies(1024)


def _configure(columns: PortColumns, slot: int, info: PortInfo, index: FieldIndex) -> RowPlan:
    """The plan of a session's field list, with ``slot``'s counters set up for it."""
    plan = columns.plan(index, info.kind == "eth")
    columns.configure(slot, plan, info.data_bits)
    return plan


class PortsChanged:
    """A node's flag: a flush changed what its ports' judgements or briefs read."""

    __slots__ = ("since_refresh",)

    def __init__(self) -> None:
        self.since_refresh = True


# Shared by every port not judged yet (a NamedTuple is tracked: one, not one a port).
_UNJUDGED = Judgement("unknown", (), math.inf)


class PortTrack(msgspec.Struct, gc=False, eq=False):
    """The facts, verdict and latest raw row of one port or NIC; counters in columns.

    Made by :meth:`of` when a port first says hello and kept for it. What it refers to
    never refers back to a track (the fleet's columns, which stage tracks until a flush,
    are handed to each call instead), so it can be in no cycle and the cyclic collector
    need not track it: 9 objects a node that the settle's full collection scanned
    (bench/bench_gc_tracked.py). Compared by identity.
    """

    info: PortInfo
    index: FieldIndex
    slot: int  # the port's row in the fleet's PortColumns
    plan: RowPlan
    # Both from the index, which every session declaring the same fields shares: a
    # names tuple and a reader per port were ~4 MiB at 1,000 nodes (9,000 ports).
    counter_names: tuple[str, ...]
    counter_values: Callable[[Row], tuple[Value, ...]]
    # The node's best rate per port kind (None: a NIC list, which sets no best).
    node_max: dict[str, float] | None
    changed: PortsChanged
    facts: PortFacts
    is_nic: bool
    row: Row | None = None
    hw: Mapping[str, int] = msgspec.field(default_factory=dict)
    brief: PortBrief | None = None  # None: link state, rate or verdict changed
    link_downed: int | None = None  # the cumulative link_downed counter (IB)
    judgement: Judgement = _UNJUDGED
    since: float | None = None
    rejudge: bool = True  # health facts changed: evaluate the rules again
    facts_key: tuple[object, ...] = ()
    expected: float | None = None  # the expected rate of the last judgement

    @classmethod
    def of(
        cls,
        info: PortInfo,
        index: FieldIndex,
        columns: PortColumns,
        node_max: dict[str, float] | None,
        changed: PortsChanged,
    ) -> PortTrack:
        """A new port's track, with a slot of ``columns`` for its counters."""
        slot = columns.allocate()
        is_nic = info.kind == "eth"
        plan = _configure(columns, slot, info, index)
        names = index.without(_NOT_COUNTERS)
        facts = PortFacts(info.name, info.kind)
        getter = index.getter(names)
        return cls(info, index, slot, plan, names, getter, node_max, changed, facts, is_nic)

    def relayout(self, info: PortInfo, index: FieldIndex, columns: PortColumns) -> None:
        """A new session may declare other fields: keep baselines of counters that remain."""
        self.info = info
        self.index = index
        self.is_nic = info.kind == "eth"
        self.plan = _configure(columns, self.slot, info, index)
        self.counter_names = index.without(_NOT_COUNTERS)
        self.counter_values = index.getter(self.counter_names)
        self.brief = None

    def absorb(self, columns: PortColumns, view: object, received: float) -> None:
        """Take this flush's readings into the facts (called only when they may change).

        ``view`` is the port's row of ``PortColumns._facts_view``.
        """
        state, phys, rate, symbol, rcv, discards, pegged = view.tolist()  # type: ignore[attr-defined]
        facts = self.facts
        if self.is_nic:
            facts.state = None if state != state else ("up" if state else "down")
            # Linux reports -1 (or an unknown value) for a link without carrier.
            facts.rate_gbps = phys / 1000 if phys == phys and phys > 0 else None
            facts.rcv_error_rate = _known(rcv)
        else:
            self._absorb_ib(columns, (state, phys, rate, symbol, rcv, discards, pegged), received)
        facts.sampled = True
        key = self._facts_key()
        if key != self.facts_key:
            self.facts_key = _FACTS_KEYS.one(key)
            self.rejudge = True
            self.brief = None
        if self.rejudge or self.brief is None:
            self.changed.since_refresh = True

    def _absorb_ib(self, columns: PortColumns, view: tuple[float, ...], received: float) -> None:
        state, phys, rate, symbol, rcv, discards, pegged = view
        facts, slot = self.facts, self.slot
        facts.state = _state_name(state, IB_PORT_STATES)
        facts.phys_state = _state_name(phys, IB_PHYS_STATES)
        facts.rate_gbps = _known(rate)
        if columns.tracked[slot, columns.column["symbol_error"]]:
            facts.symbol_error_rate = _known(symbol)
            facts.symbol_error_saturated = bool(pegged)
            if columns.delta_of(slot, "symbol_error"):
                facts.symbol_error_at = received
        facts.rcv_error_rate = _known(rcv)
        facts.xmit_discard_rate = _known(discards)
        for col in columns.fatal:
            name = columns.names[col]
            delta = columns.delta_of(slot, name)
            if delta:
                self._note_fatal(name, delta, received, columns.fatal_hold_s)
        downed = columns.value_of(slot, "link_downed")
        if downed != self.link_downed:
            self.link_downed, self.brief = downed, None
        best = self.node_max
        shown = facts.rate_gbps
        if best is None or shown is None or facts.state != "ACTIVE":
            return
        if shown > best.get(facts.kind, 0):
            best[facts.kind] = shown  # the best this node's ports of this kind have shown
            self.changed.since_refresh = True  # other ports' expected rate moved

    def _facts_key(self) -> tuple[object, ...]:
        # Everything the port rules read; a healthy port's key holds still between ticks.
        f = self.facts
        return (
            f.state,
            f.phys_state,
            f.rate_gbps,
            f.symbol_error_rate,
            f.symbol_error_saturated,
            f.symbol_error_at,
            f.rcv_error_rate,
            f.xmit_discard_rate,
            tuple(f.fatal.values()) if f.fatal else (),
        )

    def _note_fatal(self, name: str, delta: int, received: float, hold: float) -> None:
        previous = self.facts.fatal.get(name)
        # Increments within a running hold add up; after it expired the count restarts.
        held = previous is not None and previous[0] + hold > received
        total = delta + (previous[1] if held and previous else 0)
        self.facts.fatal[name] = (received, total)

    def judge(self, judgement: Judgement, now: float) -> None:
        """Store a new judgement; ``since`` moves only when the verdict changes."""
        self.rejudge = False
        previous: Verdict = self.judgement.verdict
        if judgement.verdict != previous or self.since is None:
            self.since = now
            self.brief = None
        elif judgement.reasons != self.judgement.reasons:
            self.brief = None
        self.judgement = judgement

    def brief_now(self, expected: float | None) -> PortBrief:
        """The port's brief: the same object until its link, rate or verdict changed."""
        brief, link_downed = self.brief, self.link_downed
        if brief is None or brief.expected_rate_gbps != expected:
            facts = self.facts
            brief = PortBrief(
                facts.name,
                facts.kind,
                facts.state,
                facts.phys_state,
                facts.rate_gbps,
                expected,
                link_downed,
                self.judgement.verdict,
                self.judgement.reasons,
                self.since,
            )
            self.brief = brief
        return brief
