"""Delivered against contracted: each deviation as an interval per GPU, node or port.

A deviation is a run of consecutive recorded minutes in which one GPU, node or port
breaks the contract with the same measured value; a gap in the readings or a change of
value starts a new interval. A reading that is missing is no deviation: it is not
known to break anything.

Per GPU (:mod:`ledger.delivery.gpu_terms`): ``usable_memory``, ``power_limit``,
``pcie_gen``, ``pcie_width``, ``nvlink_up`` and ``gpu_model``. Per node and per port
(:mod:`ledger.delivery.node_terms`): ``gpu_count``, ``driver``, ``network_ports`` and
``network_rate``. A deviation counts the GPU-hours of the GPUs it takes from the renter:
one for a GPU's own, the missing GPUs for ``gpu_count``, every GPU of the node for
``driver``, and each port's share of the node's GPUs for the network terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import polars as pl

from fleet.settings.contract_section import ContractSection
from ledger.delivery.breach import MINUTE_MS, Breach, Measure
from ledger.delivery.gpu_terms import gpu_breaches
from ledger.delivery.node_terms import node_breaches

HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class Deviation:
    """One stretch of delivered hardware that is not what the contract says."""

    node: str
    gpu: int | None  # None: the node's or a port's deviation
    kind: str
    start_ms: int
    end_ms: int
    measured: Measure
    contracted: Measure
    credit: Decimal | None  # money owed for it where the contract prices the kind
    port: str | None = None
    gpus: Decimal = Decimal(1)  # GPUs it takes from the renter

    @property
    def gpu_ms(self) -> Decimal:
        """Its length in GPU-milliseconds."""
        return (self.end_ms - self.start_ms) * self.gpus


Run = tuple[str, int | None, str | None, int, int, Measure, str]
"""A deviation before it is priced: node, gpu, port, start, end, measured, share."""


def runs(breach: Breach, contract: ContractSection, start_ms: int, end_ms: int) -> list[Deviation]:
    """The breach's rows joined into intervals, clipped to ``[start_ms, end_ms)``."""
    return [_deviation(run, breach, contract) for run in breach_runs(breach, start_ms, end_ms)]


def breach_runs(breach: Breach, start_ms: int, end_ms: int) -> list[Run]:
    """:func:`runs` before pricing, in the order of node, GPU, port and start."""
    rows = breach.rows.filter((pl.col("t") > start_ms - MINUTE_MS) & (pl.col("t") < end_ms))
    rows = rows.sort("node", "gpu", "port", "t", nulls_last=True)
    out: list[Run] = []
    current: list[Any] | None = None  # [node, gpu, port, start, end, measured, share]
    for node, gpu, port, t, m, share in rows.select(
        "node", "gpu", "port", "t", "m", "share"
    ).iter_rows():
        lo, hi = max(t, start_ms), min(t + MINUTE_MS, end_ms)
        key = [node, gpu, port]
        if current and current[:3] == key and current[4] == lo and current[5:] == [m, share]:
            current[4] = hi
            continue
        if current:
            out.append(tuple(current))
        current = [*key, lo, hi, m, share]
    if current:
        out.append(tuple(current))
    return out


def join_runs(parts: list[list[Run]]) -> list[Run]:
    """The runs of consecutive stretches of time (each :func:`breach_runs` of one term)
    as :func:`breach_runs` of the whole: a run that ends where the next stretch's run
    of the same node, GPU and port begins, with the same value, continues it."""
    ordered = sorted(
        (run for part in parts for run in part),
        key=lambda r: (r[0], r[1] is None, r[1] or 0, r[2] is None, r[2] or "", r[3]),
    )
    out: list[Run] = []
    for run in ordered:
        last = out[-1] if out else None
        if last and last[:3] == run[:3] and last[4] == run[3] and last[5:] == run[5:]:
            out[-1] = (*last[:4], run[4], *last[5:])
        else:
            out.append(run)
    return out


def priced(kind_runs: list[tuple[Breach, list[Run]]], contract: ContractSection) -> list[Deviation]:
    """Deviations of each term's runs, in the report's order."""
    found = [_deviation(run, b, contract) for b, term in kind_runs for run in term]
    return sorted(found, key=_order)


def _deviation(run: Run, breach: Breach, contract: ContractSection) -> Deviation:
    node, gpu, port, start, end, measured, share = run
    numerator, denominator = share.split("/")
    gpus = Decimal(numerator) / Decimal(denominator)
    rate = contract.deviation_credits.get(breach.kind)  # type: ignore[call-overload]
    credit = None if rate is None else rate * (end - start) * gpus / HOUR_MS
    return Deviation(
        node, gpu, breach.kind, start, end, measured, breach.contracted, credit, port, gpus
    )


def find_deviations(
    delivery: pl.DataFrame,
    ports: pl.DataFrame,
    contract: ContractSection,
    start_ms: int,
    end_ms: int,
) -> list[Deviation]:
    """Every deviation within the period: ``delivery`` is ``gpu_minutes`` with the
    ``delivery_minutes`` columns joined, ``ports`` the ``port_minutes`` rows."""
    frame = delivery.with_columns(t=pl.col("ts").dt.epoch("ms"))
    port_frame = ports.with_columns(t=pl.col("ts").dt.epoch("ms"))
    breaches = gpu_breaches(frame, contract) + node_breaches(frame, port_frame, contract)
    return priced([(b, breach_runs(b, start_ms, end_ms)) for b in breaches], contract)


def _order(d: Deviation) -> tuple[str, int, str, int, str]:
    return (d.node, -1 if d.gpu is None else d.gpu, d.port or "", d.start_ms, d.kind)
