"""The delivery ledger of a period: read history once, judge it, keep the result."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

import polars as pl

from fleet.settings.contract_section import ContractSection
from history.layout import DELIVERY_MINUTES, GPU_MINUTES, SCHEMAS, TS, read_table
from history.ledger import read_ledger
from history.reader import HistoryReader
from ledger.delivery.class_energy import ClassEnergy, class_energy
from ledger.delivery.classes import NodeTime, classify, judge_minutes, period_spans
from ledger.delivery.conformance import Deviation, find_deviations
from ledger.delivery.energy import Carbon, EnergyUse, carbon, energy_use, period_energy
from ledger.delivery.grid import grid_intensity
from ledger.delivery.section import EnergySection
from ledger.delivery.throughput import Throughput, datasheet_tf32, gpu_throughput, measured_tf32
from ledger.sla.period import Period


@dataclass(frozen=True)
class DeliveryLedger:
    """Everything the delivery section reports for one period."""

    period: Period
    contract: ContractSection
    nodes: list[NodeTime]
    deviations: list[Deviation]
    energy: EnergyUse
    class_energy: ClassEnergy
    pue: Decimal
    carbon: Carbon | None
    throughput: dict[tuple[str, int], Throughput | None]


def period_of(start_ms: int, end_ms: int) -> Period:
    """A report period as the SLA code's Period (its month fields unused here)."""
    return Period("", start_ms, end_ms, end_ms)


# What the node and port terms read. A history room that does not record them yet
# reads them as null (no reading, so no deviation): the terms wait for the readings.
NODE_FACTS = {
    "gpu_name": pl.String(),
    "nvlink_up": pl.UInt8(),
    "driver": pl.String(),
    "ports_active": pl.UInt16(),
}
PORT_MINUTES = "port_minutes"
PORT_SCHEMA = {
    "ts": TS,
    "node": pl.String(),
    "port": pl.String(),
    "kind": pl.String(),
    "state": pl.String(),
    "rate_gbps": pl.Float32(),
}


def read_minutes(data_dir_reader: HistoryReader, days: list[date]) -> pl.DataFrame:
    """``gpu_minutes`` of ``days`` (and the day before, for the energy counter's first
    difference) with the ``delivery_minutes`` columns joined on."""
    wanted = [days[0] - timedelta(days=1), *days]
    data_dir = data_dir_reader.data_dir
    gpu = read_table(data_dir, GPU_MINUTES, wanted)
    extra = read_table(data_dir, DELIVERY_MINUTES, wanted).unique(
        ["ts", "node", "gpu"], keep="first"
    )
    extra = extra.with_columns(
        pl.lit(None, dtype).alias(name)
        for name, dtype in NODE_FACTS.items()
        if name not in extra.columns
    )
    return gpu.join(extra, on=["ts", "node", "gpu"], how="left")


def read_ports(data_dir_reader: HistoryReader, days: list[date]) -> pl.DataFrame:
    """``port_minutes`` of ``days``; empty where history does not record ports."""
    if PORT_MINUTES not in SCHEMAS:
        return pl.DataFrame(schema=PORT_SCHEMA)
    frame = read_table(data_dir_reader.data_dir, PORT_MINUTES, days)
    return frame.select(PORT_SCHEMA.keys()).unique(["ts", "node", "port"], keep="first")


def build_ledger(
    history: HistoryReader,
    period: Period,
    contract: ContractSection,
    energy: EnergySection,
    now_ms: int,
) -> DeliveryLedger:
    """Judge ``period`` of ``history`` under ``contract`` and ``energy``."""
    days = period.days()
    inputs = read_ledger(history, days[0], days[-1], now_ms / 1000)
    minutes = read_minutes(history, days)
    spans = period_spans(period, inputs, now_ms)
    judged = judge_minutes(minutes, contract)
    nodes = classify(spans, judged, contract.gpus_per_node, period)
    ports = read_ports(history, days)
    deviations = find_deviations(minutes, ports, contract, period.start_ms, period.end_ms)
    joules = period_energy(minutes, period.start_ms, period.end_ms)
    use = energy_use(joules)
    split = class_energy(joules, judged, spans)
    return finish_ledger(history, period, contract, energy, (nodes, deviations, use, split))


def finish_ledger(
    history: HistoryReader,
    period: Period,
    contract: ContractSection,
    energy: EnergySection,
    found: tuple[list[NodeTime], list[Deviation], EnergyUse, ClassEnergy],
) -> DeliveryLedger:
    """The ledger of what the minutes gave (``found``: the nodes' time, the deviations,
    the energy and its split by class), with CO2 and each GPU's throughput."""
    nodes, deviations, use, split = found
    pue = Decimal(str(energy.pue))
    intensity = grid_intensity(energy)
    measured = measured_tf32(history.probes(), period.end_ms)
    sheet = datasheet_tf32(contract.gpu_model)
    throughput = {
        (n.node, g): gpu_throughput(measured, n.node, g, sheet) for n in nodes for g in n.gpu_ms
    }
    return DeliveryLedger(
        period, contract, nodes, deviations, use, split, pue,
        None if intensity is None else carbon(use, pue, intensity, split), throughput,
    )  # fmt: skip
