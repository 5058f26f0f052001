"""The ``delivery_minutes`` and ``port_minutes`` rows of one minute: what the delivery
ledger judges per GPU and per network port.

Taken from the minute's last snapshot once the minute closes. Every value is a slow
field (the agent reads it every slow interval, 10 s by default), so the last reading
of the minute is its reading; the energy counter's differences between minutes are
the minutes' energy (``ledger.delivery.energy``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import polars as pl

from fleet.briefs import PortBrief
from fleet.model import NodeSnapshot
from history.layout import DELIVERY_MINUTES, PORT_MINUTES, SCHEMAS

MIB = 1 << 20
U8_MAX, U16_MAX, U64_MAX = 255, 65_535, (1 << 64) - 1
TEXT_MAX = 128  # a GPU name or driver version longer than this is no reading
NETWORK_KINDS = ("ib", "roce", "efa")  # the contract's network ports; Ethernet NICs are not


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


def delivery_rows(nodes: Iterable[NodeSnapshot], minute_ms: int) -> pl.DataFrame:
    """One row per reporting GPU of ``nodes`` for the minute starting at ``minute_ms``."""
    rows = []
    for node in nodes:
        driver, active = _text(node.driver), ports_active(node)
        for gpu in node.gpus:
            if gpu.lost:
                continue
            foreign = _bounded(gpu.foreign_mem_mib, U64_MAX // MIB)
            busy = None
            if gpu.foreign_procs is not None:
                # A provider process alone on a GPU that computes: a resident daemon that
                # only holds memory on an idle GPU is not load.
                active_gpu = bool(gpu.util_gpu) or bool(gpu.sm_active)
                busy = gpu.foreign_procs > 0 and not gpu.renter_procs and active_gpu
            rows.append((
                minute_ms, node.name, gpu.index, _bounded(gpu.energy_mj, U64_MAX),
                gpu.power_limit_w, _bounded(gpu.pcie_gen, U8_MAX),
                _bounded(gpu.pcie_gen_max, U8_MAX), _bounded(gpu.pcie_width, U8_MAX),
                _bounded(gpu.pcie_width_max, U8_MAX), gpu.memory_total_bytes,
                None if foreign is None else foreign * MIB, busy, _text(gpu.name),
                _bounded(gpu.nvlink_active, U8_MAX), driver, active,
            ))  # fmt: skip
    return _frame(rows, DELIVERY_MINUTES)


def port_rows(nodes: Iterable[NodeSnapshot], minute_ms: int) -> pl.DataFrame:
    """One row per network port of ``nodes`` for the minute starting at ``minute_ms``."""
    rows = []
    for node in nodes:
        if node.status != "streaming":
            continue  # a silent node's ports are its last words, not this minute's
        for port in _network(node):
            rate = port.rate_gbps
            good = rate is not None and math.isfinite(rate) and 0 <= rate < 1e6
            rows.append((
                minute_ms, node.name, _text(port.name), port.kind, _text(port.state),
                rate if good else None,
            ))  # fmt: skip
    return _frame(rows, PORT_MINUTES)


def _frame(rows: Sequence[tuple[object, ...]], table: str) -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema=list(SCHEMAS[table]), orient="row")
    return frame.with_columns(pl.col("ts").cast(pl.Int64)).cast(SCHEMAS[table])  # type: ignore[arg-type]
