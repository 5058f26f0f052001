"""A scrape's GPU and port values read from the tick's rows, without building any object.

``FleetState`` hands out nodes whose ``gpus``/``ports``/``nics`` are built on first read
from the tick's frozen rows (:class:`fleet.state.rows.StateRows`); a scrape that read
them built ~17 objects per node per scrape, about half of its cost. Here the values a
GpuSnapshot or PortSnapshot would hold are read from the same parts, the way
:mod:`fleet.state.build` builds them, straight into a :class:`KindTable`:

- a GPU's identity and slow readings from its steady values, its fast readings from
  the decoded sample row (the exact numbers the node sent: ``fast`` columns are
  float64, which would write a reading of ``45`` as ``45.0`` and round integers
  beyond 2**53), its verdict from its brief;
- a port's link facts and verdict from its brief, its rates from the tick's frozen
  port columns, its raw counters from its row.

A node whose objects were set on a copy (a probe verdict, a flagged reason) is read
from those objects by the caller; so is any node not backed by the state's rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

from collectors.protocol import Value
from fleet.metrics.tables import KindTable
from fleet.model import GpuSnapshot, NodeSnapshot
from fleet.state.build import PortStatic
from fleet.state.layout import FieldIndex, Row
from fleet.state.port import IB_DATA_UNIT
from fleet.state.port_tick import PortReadings
from fleet.state.rows import StateRows

_MIB = 1 << 20
_AT = {f.name: i for i, f in enumerate(dataclasses.fields(GpuSnapshot))}
_AT_INDEX, _AT_UUID, _AT_NAME = _AT["index"], _AT["uuid"], _AT["name"]


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
_NOT_STEADY = frozenset(("field_errors",)) | _FROM_BRIEF | set(_FAST)
_STEADY = {name: at for name, at in _AT.items() if name not in _NOT_STEADY}

# PortSnapshot field: its source (brief attribute, or counter rate by port kind).
_PORT_BRIEF = frozenset(("rate_gbps", "expected_rate_gbps", "link_downed", "verdict"))
_IB_RATES = {
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
    return all(a in _FAST or a in _FROM_BRIEF or a in _STEADY for a in attrs)


def reads_ports(attrs: tuple[str, ...]) -> bool:
    """Whether :func:`add_port_rows` can supply every one of ``attrs``."""
    return all(a in _PORT_BRIEF or a in _IB_RATES or a == "counters" for a in attrs)


def _state_rows(node: NodeSnapshot) -> StateRows | None:
    rows = node.rows
    return rows if isinstance(rows, StateRows) else None


def add_gpu_rows(table: KindTable, node: NodeSnapshot) -> bool:
    """Add ``node``'s GPUs from its rows; False (nothing added) when it has none to read.

    A node answers from objects when its GPUs were replaced on a copy: then its briefs
    are not its rows' briefs.
    """
    rows = _state_rows(node)
    if rows is None or node.gpu_briefs is not rows.gpu_briefs:
        return False
    fast = rows.fast
    if fast is None:  # no session layout: the state builds no GPU either
        return True
    errors = rows.errors or ((),) * len(rows.gpu_briefs)
    # As many GPUs as the state would build (its map stops at the shortest part).
    gpus = list(zip(rows.gpu_briefs, rows.steady, rows.fast_rows, errors, strict=False))
    briefs = [g[0] for g in gpus]
    held = [g[1].values() for g in gpus]
    samples = [g[2] for g in gpus]
    name = node.name
    table.keys.extend((name, h[_AT_INDEX], h[_AT_UUID], h[_AT_NAME]) for h in held)
    table.entities.extend(briefs)
    for attr, column in table.values.items():
        at = _STEADY.get(attr)
        if at is not None:
            column.extend([h[at] for h in held])
        elif attr in _FROM_BRIEF:
            column.extend(map(attrgetter(attr), briefs))
        else:
            field, convert = _FAST[attr]
            column.extend(_fast_values(samples, fast, field, convert))
    return True


def _fast_values(
    samples: list[Row | None], fast: FieldIndex, field: str, convert: Callable[[Value], Value]
) -> list[Value]:
    position = fast[field]
    if position is None:
        return [None] * len(samples)
    return [
        None if row is None or position >= len(row) else convert(row[position]) for row in samples
    ]


def add_port_rows(table: KindTable, node: NodeSnapshot) -> bool:
    """Add ``node``'s ports then NICs from its rows; False (nothing added) when it has none."""
    rows = _state_rows(node)
    if rows is None or node.port_briefs is not rows.port_briefs:
        return False
    if node.nic_briefs is not rows.nic_briefs:
        return False
    name = node.name
    for part in (rows.ports, rows.nics):
        readings = rows.tick.readings([static[2] for static in part.static])
        ports = list(zip(part.briefs, part.static, part.rows, part.hw, readings, strict=False))
        table.keys.extend((name, p[0].name, p[0].kind) for p in ports)
        table.entities.extend(p[0] for p in ports)
        for attr, column in table.values.items():
            column.extend(_port_values(attr, ports))
    return True


_Port = tuple[Any, PortStatic, Row | None, Mapping[str, int], PortReadings]


def _port_values(attr: str, ports: list[_Port]) -> list[Any]:
    if attr in _PORT_BRIEF:
        return [getattr(p[0], attr) for p in ports]
    if attr == "counters":
        return [_counters(p[1], p[2], p[3]) for p in ports]
    out: list[Any] = []
    for _, static, _, _, reading in ports:
        counter, unit = (_NIC_RATES if static[3] else _IB_RATES)[attr]
        out.append(None if counter is None else reading.rate(counter, unit))
    return out


def _counters(
    static: PortStatic, row: Row | None, hw: Mapping[str, int]
) -> tuple[tuple[str, Value], ...]:
    """The port's raw counters by name, as ``fleet.state.build.port_snapshot`` lists them."""
    names, reader, _, _, width = static
    counters: tuple[tuple[str, Value], ...] = ()
    if row is not None:
        if len(row) < width:  # a short row reads as missing values
            row = [*row, *([None] * (width - len(row)))]
        counters = tuple(zip(names, reader(row), strict=True))
    if hw:
        counters += tuple(hw.items())
    return counters
