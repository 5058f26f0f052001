"""One InfiniBand / RoCE / EFA port or Ethernet NIC as the fleet state tracks it."""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import itemgetter

from collectors.agent.fields import IB_PHYS_STATES, IB_PORT_STATES, counter_bits
from collectors.protocol import PortInfo, Value
from fleet.counters import Counter, ceiling
from fleet.health import Judgement, PortFacts
from fleet.model import PortSnapshot, Verdict
from fleet.settings.health_section import HealthSection
from fleet.state.layout import FieldIndex, Row, pick, pick_int

# PMA data counters count octets divided by 4 (kernel sysfs ABI): bytes = value x 4.
IB_DATA_UNIT = 4
_IB_RATE_COUNTERS = ("symbol_error", "port_rcv_errors", "port_xmit_discards")
_IB_DATA = ("port_xmit_data", "port_rcv_data")
_NIC_COUNTERS = ("rx_bytes", "tx_bytes", "rx_errors")
# Port and NIC fields that are states or rates, not counters.
_NOT_COUNTERS = frozenset(("state", "phys_state", "rate_gbps", "up", "speed_mbps"))


def _state_name(code: int | None, names: dict[int, str]) -> str | None:
    return None if code is None else names.get(code, str(code))


def _reader(positions: list[int]) -> Callable[[Row], tuple[Value, ...]]:
    """Reads the values at ``positions`` of a row as a tuple, in one C call where it can."""
    if len(positions) >= 2:
        return itemgetter(*positions)
    if positions:
        only = positions[0]
        return lambda row: (row[only],)
    return lambda row: ()


class PortTrack:
    """Latest readings, counter baselines and the verdict of one port or NIC."""

    __slots__ = (
        "at_phys",
        "at_rate",
        "at_speed",
        "at_state",
        "at_up",
        "counter_names",
        "counter_values",
        "counters",
        "dirty",
        "expected",
        "facts",
        "facts_key",
        "fatal",
        "hw",
        "index",
        "info",
        "is_nic",
        "judgement",
        "rates",
        "rejudge",
        "row",
        "since",
        "snap",
        "tracked",
        "view",
    )

    def __init__(self, info: PortInfo, index: FieldIndex, cfg: HealthSection) -> None:
        self.info = info
        self.is_nic = info.kind == "eth"
        self.facts = PortFacts(info.name, info.kind)
        self.row: Row | None = None
        self.hw: dict[str, int] = {}
        self.counters: dict[str, Counter] = {}
        self.index = index
        self.tracked: list[tuple[str, int, Counter]] = []
        self.counter_names: tuple[str, ...] = ()
        self.view: tuple[tuple[str, int | None], ...] = ()  # the last counter_view
        self.counter_values: Callable[[Row], tuple[Value, ...]] = lambda row: ()
        self.relayout(index, cfg)
        self.judgement = Judgement("unknown", (), math.inf)
        self.since: float | None = None
        self.dirty = True  # readings changed: build a new snapshot object
        self.rejudge = True  # health facts changed: evaluate the rules again
        self.facts_key: tuple[object, ...] = ()
        self.expected: float | None = None  # the expected rate of the last judgement
        self.snap: PortSnapshot | None = None

    def relayout(self, index: FieldIndex, cfg: HealthSection) -> None:
        """A new session may declare other fields: keep baselines of counters that remain."""
        self.index = index
        self.is_nic = self.info.kind == "eth"
        # Positions read every tick, looked up once per session layout.
        self.at_state, self.at_phys, self.at_rate = (
            index["state"],
            index["phys_state"],
            index["rate_gbps"],
        )
        self.at_up, self.at_speed = index["up"], index["speed_mbps"]
        shown = [(n, i) for i, n in enumerate(index.names) if n not in _NOT_COUNTERS]
        self.counter_names = tuple(n for n, _ in shown)
        self.view = ()  # names may have moved: the next view starts afresh
        positions = [i for _, i in shown]
        self.counter_values = _reader(positions)
        names = _NIC_COUNTERS if self.is_nic else self._ib_tracked(cfg)
        self.tracked = []
        for name in names:
            position = index[name]
            if position is None:
                continue
            top = ceiling(counter_bits(name, self.info.data_bits))
            counter = self.counters.get(name)
            if counter is None:
                counter = Counter(top=top)
                self.counters[name] = counter
            counter.top = top  # a new session may report another counter width
            self.tracked.append((name, position, counter))
        tracked = {name: counter for name, _, counter in self.tracked}
        # (symbol_error, port_rcv_errors, port_xmit_discards) or (rx_errors,): the rate facts.
        rated = ("rx_errors",) if self.is_nic else _IB_RATE_COUNTERS
        self.rates = tuple(tracked.get(name) for name in rated)
        self.fatal = tuple(
            (name, tracked[name]) for name in cfg.port_fatal_counters if name in tracked
        )

    @staticmethod
    def _ib_tracked(cfg: HealthSection) -> tuple[str, ...]:
        fatal = tuple(n for n in cfg.port_fatal_counters if n not in _IB_RATE_COUNTERS)
        return _IB_RATE_COUNTERS + _IB_DATA + fatal

    def apply(self, row: Row, t: float, received: float, cfg: HealthSection) -> None:
        """Take one tick's counters for this port."""
        if len(row) < len(self.index.names):
            row = self.index.pad(row)
        self.row = row
        for _, position, counter in self.tracked:
            counter.update(row[position], t)
        if self.is_nic:
            self._apply_nic(row)
        else:
            self._apply_ib(row, received, cfg.port_fatal_hold_s)
        self.facts.sampled = True
        self.dirty = True
        key = self._facts_key()
        if key != self.facts_key:
            self.facts_key = key
            self.rejudge = True

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

    def _apply_ib(self, row: Row, received: float, hold: float) -> None:
        facts = self.facts
        facts.state = _state_name(pick_int(row, self.at_state), IB_PORT_STATES)
        facts.phys_state = _state_name(pick_int(row, self.at_phys), IB_PHYS_STATES)
        rate = pick(row, self.at_rate)
        facts.rate_gbps = None if rate is None else float(rate)
        symbol, rcv, discards = self.rates
        if symbol is not None:
            facts.symbol_error_rate = symbol.rate
            facts.symbol_error_saturated = symbol.saturated
            if symbol.delta:
                facts.symbol_error_at = received
        facts.rcv_error_rate = None if rcv is None else rcv.rate
        facts.xmit_discard_rate = None if discards is None else discards.rate
        for name, counter in self.fatal:
            if counter.delta:
                self._note_fatal(name, counter, received, hold)

    def _note_fatal(self, name: str, counter: Counter, received: float, hold: float) -> None:
        assert counter.delta is not None
        previous = self.facts.fatal.get(name)
        # Increments within a running hold add up; after it expired the count restarts.
        held = previous is not None and previous[0] + hold > received
        total = counter.delta + (previous[1] if held and previous else 0)
        self.facts.fatal[name] = (received, total)

    def _apply_nic(self, row: Row) -> None:
        up = pick(row, self.at_up)
        self.facts.state = None if up is None else ("up" if up else "down")
        speed = pick(row, self.at_speed)
        # Linux reports -1 (or an unknown value) for a link without carrier.
        self.facts.rate_gbps = float(speed) / 1000 if speed is not None and speed > 0 else None
        errors = self.rates[0]
        self.facts.rcv_error_rate = None if errors is None else errors.rate

    def counter_view(self) -> tuple[tuple[str, int | None], ...]:
        """The latest raw counters by name (states and rates left out)."""
        row = self.row
        if row is None:
            return ()
        # sysfs counters are integers; the agent sends them as JSON integers.
        values: tuple[int | None, ...] = self.counter_values(row)  # type: ignore[assignment]
        last = self.view
        if len(last) != len(values):
            self.view = tuple(zip(self.counter_names, values, strict=True))
            return self.view
        # A pair whose value held still is last tick's object: a healthy port's error
        # counters stay at 0, so most of its ~17 pairs are not allocated (and later
        # scanned by the collector) again every tick.
        self.view = tuple(
            [
                pair if pair[1] == value and type(pair[1]) is type(value) else (pair[0], value)
                for pair, value in zip(last, values, strict=True)
            ]
        )
        return self.view

    def rate(self, name: str, unit: int = 1) -> float | None:
        """Per-second rate of a tracked counter (times ``unit``), None when unknown."""
        counter = self.counters.get(name)
        if counter is None or counter.rate is None:
            return None
        return counter.rate * unit

    def judge(self, judgement: Judgement, now: float) -> None:
        """Store a new judgement; ``since`` moves only when the verdict changes."""
        self.rejudge = False
        previous: Verdict = self.judgement.verdict
        if judgement.verdict != previous or self.since is None:
            self.since = now
        self.judgement = judgement
