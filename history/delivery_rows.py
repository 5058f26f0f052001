"""The ``delivery_minutes`` and ``port_minutes`` rows of one minute: what the delivery
ledger judges per GPU and per network port.

Taken from the minute's last snapshot once the minute closes. Every value is a slow
field (the agent reads it every slow interval, 10 s by default), so the last reading
of the minute is its reading; the energy counter's differences between minutes are
the minutes' energy (``ledger.delivery.energy``).

The state's nodes are read from their tick's rows, column by column
(:mod:`history.steady_columns`): building every GPU object of the fleet once a minute
to read a dozen fields cost ~0.2 s at 1,000 nodes. Other nodes (a copy with objects set,
a test's) are read from their objects; both become the same columns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import compress, repeat
from operator import attrgetter
from typing import Any

import polars as pl

from fleet.briefs import PortBrief
from fleet.model import NodeSnapshot
from fleet.state.layout import pick
from fleet.state.rows import StateRows
from history.layout import DELIVERY_MINUTES, PORT_MINUTES, SCHEMAS
from history.steady_columns import SteadyColumns, built_gpus, state_rows_of

MIB = 1 << 20
U8_MAX, U16_MAX, U64_MAX = 255, 65_535, (1 << 64) - 1
TEXT_MAX = 128  # a GPU name or driver version longer than this is no reading
NETWORK_KINDS = ("ib", "roce", "efa")  # the contract's network ports; Ethernet NICs are not
# What a delivery row reads of a GPU: its slow readings, and two fast ones (is it busy).
_STEADY_READS = (
    "index", "name", "energy_mj", "power_limit_w", "pcie_gen", "pcie_gen_max", "pcie_width",
    "pcie_width_max", "memory_total_bytes", "foreign_mem_mib", "foreign_procs",
    "renter_procs", "nvlink_active",
)  # fmt: skip
_FAST_READS = ("util_gpu", "sm_active")
_NODE_READS = ("node", "driver", "ports_active")


def _bounded(value: int | None, top: int) -> int | None:
    # Agents are not trusted: a value out of the column's range is no reading.
    return value if value is not None and 0 <= value <= top else None


def _text(value: str | None) -> str | None:
    return value if value is not None and 0 < len(value) <= TEXT_MAX else None


def _network(node: NodeSnapshot) -> list[PortBrief]:
    # The briefs carry name, kind, state and rate, and are kept while unchanged: the
    # port objects would be built for every port of the fleet once a minute.
    return [p for p in node.port_briefs if p.kind in NETWORK_KINDS]


def ports_active(node: NodeSnapshot) -> int | None:
    """The node's network ports in state ACTIVE; None while some port's state is unknown."""
    ports = _network(node)
    if any(p.state is None for p in ports):
        return None
    return _bounded(sum((p.state or "").upper() == "ACTIVE" for p in ports), U16_MAX)


class _GpuReadings:
    """Every GPU's readings a delivery row needs, as columns, node after node; and
    whether each GPU is lost (its row is left out)."""

    def __init__(self) -> None:
        reads = (*_STEADY_READS, *_FAST_READS, *_NODE_READS)
        self.columns: dict[str, list[Any]] = {name: [] for name in reads}
        self.lost: list[bool] = []
        self._steady = SteadyColumns()  # a run of nodes read from their rows

    def add_rows(self, node: NodeSnapshot, rows: StateRows) -> None:
        """One node's GPUs from its tick's rows, as ``StateRows.build`` would build them."""
        fast, count = rows.fast, built_gpus(rows)
        if fast is None:  # no session layout: the state builds no GPU either
            return
        briefs, samples = rows.gpu_briefs, rows.fast_rows
        self._steady.add(rows.steady_parts, count)
        self.lost.extend(map(attrgetter("lost"), briefs[:count]))
        for name in _FAST_READS:
            at = fast[name]
            self.columns[name].extend(pick(row, at) for row in samples[:count])
        self._node(node, count)

    def add_objects(self, node: NodeSnapshot) -> None:
        """One node's GPUs from its objects."""
        self._flush()
        gpus = node.gpus
        self.lost.extend(gpu.lost for gpu in gpus)
        for name in (*_STEADY_READS, *_FAST_READS):
            self.columns[name].extend(map(attrgetter(name), gpus))
        self._node(node, len(gpus))

    def _node(self, node: NodeSnapshot, count: int) -> None:
        facts = (node.name, _text(node.driver), ports_active(node))
        for name, value in zip(_NODE_READS, facts, strict=True):
            self.columns[name].extend(repeat(value, count))

    def _flush(self) -> None:
        steady = self._steady
        if steady.rows:
            for name in _STEADY_READS:
                self.columns[name].extend(steady.column(name))
            self._steady = SteadyColumns()

    def reporting(self) -> dict[str, list[Any]]:
        """The columns of the GPUs that are not lost."""
        self._flush()
        keep = [not lost for lost in self.lost]
        if all(keep):
            return self.columns
        return {name: list(compress(values, keep)) for name, values in self.columns.items()}


def delivery_rows(nodes: Iterable[NodeSnapshot], minute_ms: int) -> pl.DataFrame:
    """One row per reporting GPU of ``nodes`` for the minute starting at ``minute_ms``."""
    readings = _GpuReadings()
    for node in nodes:
        rows = state_rows_of(node)
        if rows is not None:
            readings.add_rows(node, rows)
        else:
            readings.add_objects(node)
    c = readings.reporting()
    foreign = [_bounded(v, U64_MAX // MIB) for v in c["foreign_mem_mib"]]
    return _frame(
        DELIVERY_MINUTES,
        len(c["node"]),
        minute_ms,
        c["node"],
        c["index"],
        [_bounded(v, U64_MAX) for v in c["energy_mj"]],
        c["power_limit_w"],
        *([_bounded(v, U8_MAX) for v in c[name]] for name in _PCIE),
        c["memory_total_bytes"],
        [None if v is None else v * MIB for v in foreign],
        list(map(_busy, c["foreign_procs"], c["renter_procs"], c["util_gpu"], c["sm_active"])),
        list(map(_text, c["name"])),
        [_bounded(v, U8_MAX) for v in c["nvlink_active"]],
        c["driver"],
        c["ports_active"],
    )


_PCIE = ("pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max")


def _busy(foreign: int | None, renter: int | None, util: Any, sm: Any) -> bool | None:
    """A provider process alone on a GPU that computes: a resident daemon that only holds
    memory on an idle GPU is not load. None: the agent was given no renter identity."""
    if foreign is None:
        return None
    return foreign > 0 and not renter and (bool(util) or bool(sm))


def port_rows(nodes: Iterable[NodeSnapshot], minute_ms: int) -> pl.DataFrame:
    """One row per network port of ``nodes`` for the minute starting at ``minute_ms``."""
    names: list[str] = []
    ports: list[PortBrief] = []
    for node in nodes:
        if node.status != "streaming":
            continue  # a silent node's ports are its last words, not this minute's
        network = _network(node)
        names.extend(repeat(node.name, len(network)))
        ports.extend(network)
    return _frame(
        PORT_MINUTES,
        len(ports),
        minute_ms,
        names,
        [_text(p.name) for p in ports],
        [p.kind for p in ports],
        [_text(p.state) for p in ports],
        [_rate(p.rate_gbps) for p in ports],
    )


def _rate(rate: float | None) -> float | None:
    good = rate is not None and math.isfinite(rate) and 0 <= rate < 1e6
    return rate if good else None


def _frame(table: str, count: int, minute_ms: int, *columns: Sequence[object]) -> pl.DataFrame:
    """``table``'s rows from its columns after ``ts`` (every row's ``ts`` is ``minute_ms``)."""
    schema = SCHEMAS[table]
    data = dict(zip(schema, ([minute_ms] * count, *columns), strict=True))
    frame = pl.DataFrame(data, schema=list(schema))
    return frame.with_columns(pl.col("ts").cast(pl.Int64)).cast(schema)  # type: ignore[arg-type]
