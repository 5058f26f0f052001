"""The delivery figures of this moment, for the dashboard's panel: idle GPUs and what
they cost per day, deviations from the contract, energy since the day began.

A JSON-ready document, as the campaign panel's is: the UI draws it and never imports
the ledger. Energy today is the rise of each GPU's energy counter since the first
reading this process saw today (:class:`EnergyToday` keeps that baseline).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot
from fleet.settings.contract_section import ContractSection
from ledger.delivery.node_terms import NETWORK_KINDS, driver_allowed

DAY_S = 86_400
GIB = 1 << 30


@dataclass
class EnergyToday:
    """Each GPU's energy counter at the first reading of the UTC day."""

    day: int = -1
    baseline: dict[tuple[str, int], int] = field(default_factory=dict)

    def kwh(self, snapshot: FleetSnapshot) -> float:
        """kWh since the day's first reading, summed over the GPUs with a counter."""
        day = int(snapshot.taken_at // DAY_S)
        if day != self.day:
            self.day, self.baseline = day, {}
        total = 0
        for node in snapshot.nodes:
            for gpu in node.gpus:
                if gpu.energy_mj is None:
                    continue
                start = self.baseline.setdefault((node.name, gpu.index), gpu.energy_mj)
                if gpu.energy_mj < start:  # a driver reload: count from the new zero
                    self.baseline[(node.name, gpu.index)] = start = 0
                total += gpu.energy_mj - start
        return total / 3.6e9


def gpu_deviations(gpu: GpuSnapshot, contract: ContractSection) -> list[str]:
    """The contract terms this GPU breaks now, as short labels."""
    out = []
    limit, gen, width = gpu.power_limit_w, gpu.pcie_gen, gpu.pcie_width
    if contract.power_limit_w is not None and limit is not None:
        out += [f"power {limit:.0f} W"] if abs(limit - contract.power_limit_w) >= 1.0 else []
    if contract.pcie_gen is not None and gen is not None and gen < contract.pcie_gen:
        out.append(f"PCIe Gen{gen}")
    if contract.pcie_width is not None and width is not None and width < contract.pcie_width:
        out.append(f"PCIe x{width}")
    total = gpu.memory_total_bytes
    if contract.usable_memory_gib is not None and total is not None:
        usable = (total - ((gpu.foreign_mem_mib or 0) << 20)) / GIB
        out += [f"memory {usable:.1f} GiB"] if usable < contract.usable_memory_gib else []
    links = gpu.nvlink_active
    if contract.nvlinks_up is not None and links is not None and links < contract.nvlinks_up:
        out.append(f"NVLink {links}/{contract.nvlinks_up} up")
    wanted = contract.gpu_model
    if wanted is not None and gpu.name and wanted.lower() not in gpu.name.lower():
        out.append(f"model {gpu.name}")
    return out


def node_deviations(node: NodeSnapshot, contract: ContractSection) -> list[str]:
    """The contract terms the node itself breaks now (GPU count, driver, network), as
    short labels; its GPUs' own are :func:`gpu_deviations`. A node that is not streaming
    has no readings of now, so no deviation."""
    if node.status != "streaming":
        return []
    out = []
    if len(node.gpus) < contract.gpus_per_node:
        out.append(f"GPUs {len(node.gpus)}/{contract.gpus_per_node}")
    if node.driver is not None and driver_allowed(node.driver, contract) is False:
        out.append(f"driver {node.driver}")
    network = [p for p in node.ports if p.kind in NETWORK_KINDS]
    active = [p for p in network if (p.state or "").upper() == "ACTIVE"]
    wanted = contract.network_ports
    known = all(p.state is not None for p in network)
    if wanted is not None and known and len(active) < wanted:
        out.append(f"network {len(active)}/{wanted} ports")
    rate = contract.network_rate_gbps
    if rate is not None:
        out += [
            f"network {p.name} {p.rate_gbps:g} Gb/s"
            for p in active
            if p.rate_gbps is not None and p.rate_gbps < rate
        ]
    return out


def delivery_now(
    snapshot: FleetSnapshot, contract: ContractSection, today: EnergyToday
) -> dict[str, Any]:
    """The panel's document for ``snapshot``."""
    floor = contract.working_floor_percent
    idle = deviating = 0
    deviations: list[dict[str, Any]] = []
    node_found: list[dict[str, Any]] = []
    for node in snapshot.nodes:
        if node.state != "up":
            continue
        found = node_deviations(node, contract)
        if found:
            node_found.append({"node": node.name, "what": found})
        for gpu in node.gpus:
            activity = gpu.sm_active if gpu.sm_active is not None else gpu.util_gpu
            if activity is not None and activity < floor and not gpu.foreign_procs:
                idle += 1
            found = gpu_deviations(gpu, contract)
            if found:
                deviating += 1
                deviations.append({"node": node.name, "gpu": gpu.index, "what": found})
    price = contract.gpu_hour_price
    per_day = None if price is None else str((price * idle * 24).quantize(Decimal("0.01")))
    return {
        "idle_gpus": idle,
        "idle_cost_per_day": per_day,
        "currency": contract.currency,
        "deviating_gpus": deviating,
        "deviations": deviations[:20],
        "deviating_nodes": len(node_found),
        "node_deviations": node_found[:20],
        "energy_today_kwh": round(today.kwh(snapshot), 3),
    }
