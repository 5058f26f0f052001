"""The ``delivery_minutes`` rows of one minute: what the delivery ledger judges per GPU.

Taken from the minute's last snapshot once the minute closes. Every value is a slow
field (the agent reads it every slow interval, 10 s by default), so the last reading
of the minute is its reading; the energy counter's differences between minutes are
the minutes' energy (``ledger.delivery.energy``).
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from fleet.model import NodeSnapshot
from history.layout import DELIVERY_MINUTES, SCHEMAS

MIB = 1 << 20
U8_MAX, U64_MAX = 255, (1 << 64) - 1


def _bounded(value: int | None, top: int) -> int | None:
    # Agents are not trusted: a value out of the column's range is no reading.
    return value if value is not None and 0 <= value <= top else None


def delivery_rows(nodes: Iterable[NodeSnapshot], minute_ms: int) -> pl.DataFrame:
    """One row per reporting GPU of ``nodes`` for the minute starting at ``minute_ms``."""
    rows = []
    for node in nodes:
        for gpu in node.gpus:
            if gpu.lost:
                continue
            foreign = _bounded(gpu.foreign_mem_mib, U64_MAX // MIB)
            busy = None
            if gpu.foreign_procs is not None:
                # A provider process alone on a GPU that computes: a resident daemon that
                # only holds memory on an idle GPU is not load.
                active = bool(gpu.util_gpu) or bool(gpu.sm_active)
                busy = gpu.foreign_procs > 0 and not gpu.renter_procs and active
            rows.append((
                minute_ms, node.name, gpu.index, _bounded(gpu.energy_mj, U64_MAX),
                gpu.power_limit_w, _bounded(gpu.pcie_gen, U8_MAX),
                _bounded(gpu.pcie_gen_max, U8_MAX), _bounded(gpu.pcie_width, U8_MAX),
                _bounded(gpu.pcie_width_max, U8_MAX), gpu.memory_total_bytes,
                None if foreign is None else foreign * MIB, busy,
            ))  # fmt: skip
    frame = pl.DataFrame(rows, schema=list(SCHEMAS[DELIVERY_MINUTES]), orient="row")
    return frame.with_columns(pl.col("ts").cast(pl.Int64)).cast(SCHEMAS[DELIVERY_MINUTES])  # type: ignore[arg-type]
