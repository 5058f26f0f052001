"""A scrape's GPU and port values read from the tick's rows, without building any object.

``FleetState`` hands out nodes whose ``gpus``/``ports``/``nics`` are built on first read
from the tick's frozen rows (:class:`fleet.state.rows.StateRows`); a scrape that read
them built ~17 objects per node per scrape, about half of its cost. Here the values a
GpuSnapshot or PortSnapshot would hold are read from the same parts, the way
:mod:`fleet.state.build` builds them, straight into a :class:`KindTable`:

- a GPU's identity and slow readings from its steady parts, its fast readings from
  the decoded sample row (the exact numbers the node sent: ``fast`` columns are
  float64, which would write a reading of ``45`` as ``45.0`` and round integers
  beyond 2**53), its verdict from its brief;
- a port's link facts and verdict from its brief, its rates from the tick's frozen
  port columns, its raw counters from its row.

A node whose objects were set on a copy (a probe verdict, a flagged reason) is read
from those objects by the caller; so is any node not backed by the state's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, repeat
from operator import add, attrgetter, call, itemgetter, mul
from typing import Any

import numpy as np

from collectors.protocol import Value
from exporter.tables import KeyedValues, KindTable
from fleet.model import NodeSnapshot
from fleet.state.build import PortStatic
from fleet.state.layout import FieldIndex, Row
from fleet.state.port import IB_DATA_UNIT
from fleet.state.port_tick import PortFrozen
from fleet.state.rows import StateRows
from history.steady_columns import STEADY_ATTRIBUTES, SteadyColumns, built_gpus

_MIB = 1 << 20


def _as_int(value: Value) -> int | None:
    return None if value is None else int(value)


def _bytes_of_mib(value: Value) -> int | None:
    return None if value is None else int(value * _MIB)


def _as_sent(value: Value) -> Value:
    return value


# GpuSnapshot field: (field in the sample row, conversion), as fleet.state.build does.
_FAST: dict[str, tuple[str, Callable[[Value], Value]]] = {
    "util_gpu": ("util_gpu", _as_sent),
    "util_mem": ("util_mem", _as_sent),
    "sm_active": ("sm_active", _as_sent),
    "tensor_active": ("tensor_active", _as_sent),
    "power_w": ("power_w", _as_sent),
    "temp_c": ("temp_c", _as_sent),
    "sm_clock_mhz": ("sm_clock_mhz", _as_sent),
    "mem_used_bytes": ("mem_used_mib", _bytes_of_mib),
    "clock_reasons": ("clock_reasons", _as_int),
    "pstate": ("pstate", _as_int),
}
_FROM_BRIEF = frozenset(("lost", "verdict", "reasons", "since", "probe_verdict"))

# PortSnapshot field: its source (brief attribute, or counter rate by port kind).
_PORT_BRIEF = frozenset(("rate_gbps", "expected_rate_gbps", "link_downed", "verdict"))
_IB_RATES: dict[str, tuple[str | None, int]] = {
    "symbol_error_rate": ("symbol_error", 1),
    "rcv_error_rate": ("port_rcv_errors", 1),
    "xmit_discard_rate": ("port_xmit_discards", 1),
    "rx_bytes_per_s": ("port_rcv_data", IB_DATA_UNIT),
    "tx_bytes_per_s": ("port_xmit_data", IB_DATA_UNIT),
}
_NIC_RATES: dict[str, tuple[str | None, int]] = {
    "symbol_error_rate": (None, 1),
    "rcv_error_rate": ("rx_errors", 1),
    "xmit_discard_rate": (None, 1),
    "rx_bytes_per_s": ("rx_bytes", 1),
    "tx_bytes_per_s": ("tx_bytes", 1),
}


def reads_gpus(attrs: tuple[str, ...]) -> bool:
    """Whether :func:`add_gpu_rows` can supply every one of ``attrs``."""
    return all(a in _FAST or a in _FROM_BRIEF or a in STEADY_ATTRIBUTES for a in attrs)


def reads_ports(attrs: tuple[str, ...]) -> bool:
    """Whether :func:`add_port_rows` can supply every one of ``attrs``."""
    return all(a in _PORT_BRIEF or a in _IB_RATES or a == "counters" for a in attrs)


def _state_rows(node: NodeSnapshot) -> StateRows | None:
    rows = node.rows
    return rows if isinstance(rows, StateRows) else None


def gpu_rows_of(node: NodeSnapshot) -> StateRows | None:
    """``node``'s rows when its GPUs are read from them, else None (read its objects).

    A node answers from objects when its GPUs were replaced on a copy (a probe verdict,
    a flagged reason): then its briefs are not its rows' briefs.
    """
    rows = _state_rows(node)
    return rows if rows is not None and node.gpu_briefs is rows.gpu_briefs else None


def port_rows_of(node: NodeSnapshot) -> StateRows | None:
    """``node``'s rows when its ports and NICs are read from them, else None."""
    rows = _state_rows(node)
    if rows is None or node.port_briefs is not rows.port_briefs:
        return None
    return rows if node.nic_briefs is rows.nic_briefs else None


Run = list[tuple[str, StateRows]]
"""Consecutive nodes of a chunk read from their rows: (node name, rows)."""


def add_gpu_run(table: KindTable, run: Run) -> None:
    """Add the GPUs of ``run``'s nodes, one list per attribute for the whole run.

    A steady attribute is one pass over the GPUs' steady parts (no per-GPU list of every
    field: :mod:`history.steady_columns`), the sample rows become columns by one
    ``zip(*rows)``, so the interpreter loops per node and per attribute, not per GPU.
    """
    briefs: list[Any] = []
    held = SteadyColumns()
    samples: list[Row | None] = []
    layouts: list[tuple[FieldIndex, int]] = []
    names: list[str] = []
    for name, rows in run:
        fast, count = rows.fast, built_gpus(rows)  # as many GPUs as the state would build
        if fast is None:  # no session layout: the state builds no GPU either
            continue
        briefs.extend(rows.gpu_briefs[:count])
        held.add(rows.steady_parts, count)
        samples.extend(rows.fast_rows[:count])
        names.append(name)
        layouts.append((fast, count))
    node_names = chain.from_iterable(map(repeat, names, (c for _, c in layouts)))
    identity = (held.column("index"), held.column("uuid"), held.column("name"))
    table.keys.extend(zip(node_names, *identity, strict=True))
    table.entities.extend(briefs)
    fast_columns = _fast_columns(samples, layouts)
    for attr, column in table.values.items():
        if attr in STEADY_ATTRIBUTES:
            column.extend(held.column(attr))  # one pass per attribute, no per-GPU list
        elif attr in _FROM_BRIEF:
            column.extend(map(attrgetter(attr), briefs))
        else:
            field, convert = _FAST[attr]
            column.extend(_fast_values(samples, layouts, fast_columns, field, convert))


def _fast_columns(
    samples: list[Row | None], layouts: list[tuple[FieldIndex, int]]
) -> list[tuple[Value, ...]] | None:
    """Every sample row's fields as columns, when one field layout serves the run and
    every GPU has a row (the usual fleet); else None (read row by row)."""
    if len({fast.names for fast, _ in layouts}) != 1 or None in samples:
        return None
    return list(zip(*samples, strict=False))  # rows may be longer than the fields read


def _fast_values(
    samples: list[Row | None],
    layouts: list[tuple[FieldIndex, int]],
    columns: list[tuple[Value, ...]] | None,
    field: str,
    convert: Callable[[Value], Value],
) -> Sequence[Value]:
    """One fast field of every GPU's sample row (None where the row or the field is missing).

    ``columns`` are the rows' fields as columns (see :func:`_fast_columns`): a field
    every row reaches is read from its column, converted by one C-level pass where no
    value is missing.
    """
    where = {fast[field] for fast, _ in layouts}
    if len(where) == 1:  # one field layout for the run: the usual fleet
        position = where.pop()
        if position is None:
            return [None] * len(samples)
        if columns is not None and position < len(columns):
            column = columns[position]
            if convert is _as_sent:
                return column
            if None not in column:
                return _converted(column, convert)
        if convert is _as_sent:
            return [None if r is None or position >= len(r) else r[position] for r in samples]
        return [None if r is None or position >= len(r) else convert(r[position]) for r in samples]
    positions = [fast[field] for fast, count in layouts for _ in range(count)]
    return [
        None if r is None or p is None or p >= len(r) else convert(r[p])
        for r, p in zip(samples, positions, strict=True)
    ]


def _converted(column: tuple[Value, ...], convert: Callable[[Value], Value]) -> Sequence[Value]:
    """``convert`` of every value of a column without None, in C where it can be."""
    if convert is _as_int:
        return list(map(int, column))  # type: ignore[arg-type]
    if convert is _bytes_of_mib:
        return list(map(int, map(mul, column, repeat(_MIB))))
    return list(map(convert, column))


_NAME, _KIND = attrgetter("name"), attrgetter("kind")
_NAMES, _READER, _WIDTH = itemgetter(0), itemgetter(1), itemgetter(4)


def add_port_run(table: KindTable, run: Run) -> None:
    """Add the ports then NICs of ``run``'s nodes; rates read from the tick's columns at once."""
    briefs: list[Any] = []
    statics: list[PortStatic] = []
    ticks: list[tuple[PortFrozen, int]] = []  # each node's tick and port count
    reads_counters = "counters" in table.flat
    for _, rows in run:
        start = len(briefs)
        for part in (rows.ports, rows.nics):
            count = min(len(part.briefs), len(part.static), len(part.rows), len(part.hw))
            static = part.static[:count]
            briefs.extend(part.briefs[:count])
            statics.extend(static)
            if reads_counters:
                _add_counters(table, static, part.rows[:count], part.hw[:count])
        ticks.append((rows.tick, len(briefs) - start))
    node_names = chain.from_iterable(map(repeat, (name for name, _ in run), (c for _, c in ticks)))
    table.keys.extend(zip(node_names, map(_NAME, briefs), map(_KIND, briefs), strict=True))
    table.entities.extend(briefs)
    rates = _rates(statics, ticks) if any(a in _IB_RATES for a in table.values) else {}
    for attr, column in table.values.items():
        if attr in _PORT_BRIEF:
            column.extend(map(attrgetter(attr), briefs))
        elif attr != "counters":
            column.extend(rates[attr])


def _add_counters(
    table: KindTable,
    statics: Sequence[PortStatic],
    rows: Sequence[Row | None],
    hw: Sequence[Mapping[str, int]],
) -> None:
    """The raw counters of one node's ports (or NICs) into ``table``, as
    ``fleet.state.build.port_snapshot`` lists them.

    The usual node (every row of one length, no hardware counters) is read by one
    C-level pass over every port's row reader; the others port by port.
    """
    padded = None if any(hw) else _padded(statics, rows)
    if padded is None:
        for static, row, extra in zip(statics, rows, hw, strict=True):
            table.add_keyed("counters", *_counters(static, row, extra))
        return
    names, flat = table.values["counters"], table.flat["counters"]
    before = len(flat)
    names.extend(map(_NAMES, statics))
    flat.extend(chain.from_iterable(map(call, map(_READER, statics), padded)))
    if len(flat) - before != sum(map(len, map(_NAMES, statics))):
        raise ValueError("a port row's counters do not match their names")


def _padded(statics: Sequence[PortStatic], rows: Sequence[Row | None]) -> Iterable[Row] | None:
    """``rows`` as long as their ports' declared fields (a short row reads as missing
    values, as ``port_snapshot`` reads it), when every row is a tuple of one length and
    every port declares as many fields; else None."""
    if not rows or set(map(type, rows)) != {tuple} or len(set(map(_WIDTH, statics))) != 1:
        return None
    lengths = set(map(len, rows))  # type: ignore[arg-type]
    if len(lengths) != 1:
        return None
    missing = statics[0][4] - lengths.pop()
    if missing <= 0:
        return rows  # type: ignore[return-value]
    return map(add, rows, repeat((None,) * missing))


def _rates(statics: list[PortStatic], ticks: list[tuple[PortFrozen, int]]) -> dict[str, list[Any]]:
    """Each rate attribute of every port, as ``PortReadings.rate`` gives it (None: unknown)."""
    out: dict[str, list[Any]] = {attr: [] for attr in _IB_RATES}
    start = 0
    for tick, group in _tick_groups(ticks):
        count = sum(group)
        slots = [static[2] for static in statics[start : start + count]]
        nic = np.array([static[3] for static in statics[start : start + count]], dtype=bool)
        read = np.where(tick.tracked[slots], tick.rate[slots], np.nan)
        for attr, values in out.items():
            values.extend(_rate_column(tick, read, nic, attr))
        start += count
    return out


def _tick_groups(ticks: list[tuple[PortFrozen, int]]) -> list[tuple[PortFrozen, list[int]]]:
    """Consecutive nodes that share one frozen tick (all of a snapshot's, as a rule)."""
    groups: list[tuple[PortFrozen, list[int]]] = []
    for tick, count in ticks:
        if groups and groups[-1][0] is tick:
            groups[-1][1].append(count)
        else:
            groups.append((tick, [count]))
    return groups


def _rate_column(tick: PortFrozen, read: np.ndarray, nic: np.ndarray, attr: str) -> list[Any]:
    values = np.full(len(nic), np.nan)
    for rates, ports in ((_IB_RATES, ~nic), (_NIC_RATES, nic)):
        counter, unit = rates[attr]
        col = None if counter is None else tick.column.get(counter)
        if col is not None:
            values[ports] = read[ports, col] * unit  # as Python's float * int: one rounding
    out: list[Any] = values.tolist()
    for at in np.flatnonzero(np.isnan(values)).tolist():  # unknown: a few NICs' rates
        out[at] = None
    return out


def _read_counters(static: PortStatic, row: Row) -> tuple[Value, ...]:
    """The counter values of a whole row, in the order of the port's counter names."""
    values = tuple(static[1](row))
    if len(values) != len(static[0]):
        raise ValueError("a port row's counters do not match their names")
    return values


def _counters(static: PortStatic, row: Row | None, hw: Mapping[str, int]) -> KeyedValues:
    """The port's raw counters as names and values, as ``fleet.state.build.port_snapshot``
    lists them (without pairing each name with its value)."""
    names, _, _, _, width = static
    values: tuple[Value, ...] = ()
    if row is not None:
        if len(row) < width:  # a short row reads as missing values
            row = [*row, *([None] * (width - len(row)))]
        values = _read_counters(static, row)
    else:
        names = ()
    if hw:
        return (*names, *hw.keys()), (*values, *hw.values())
    return names, values
