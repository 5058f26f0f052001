"""Inventory: what each node has against what the contract sold, before anything runs.

A node with 7 of 8 GPUs fails here with that cause; an all-reduce across it would
only hang with an opaque error (NVIDIA AI Cluster Runtime users, aicr #1858).
"""

from __future__ import annotations

from campaign.model import Evidence
from fleet.model import NodeSnapshot
from fleet.settings.contract_section import ContractSection

GIB = 1 << 30


def inventory_findings(node: NodeSnapshot, contract: ContractSection) -> list[Evidence]:
    """Every way ``node`` falls short of ``contract``; empty when it meets it."""
    found = _gpu_count(node, contract)
    for gpu in (g for g in node.gpus if not g.lost):
        found += _gpu_findings(gpu.index, gpu.serial, node, contract)
    found += _driver(node, contract) + _network(node, contract)
    return found


def _gpu_count(node: NodeSnapshot, contract: ContractSection) -> list[Evidence]:
    present = sum(1 for g in node.gpus if not g.lost)
    if present >= contract.gpus_per_node:
        return []
    lost = [g.index for g in node.gpus if g.lost]
    shown = f" (lost: {', '.join(map(str, lost))})" if lost else ""
    return [
        _found(
            "gpu_count",
            f"{present} of {contract.gpus_per_node} GPUs present{shown}",
            present,
            contract.gpus_per_node,
        )
    ]


def _gpu_findings(
    index: int, serial: str | None, node: NodeSnapshot, contract: ContractSection
) -> list[Evidence]:
    gpu = next(g for g in node.gpus if g.index == index)
    found: list[Evidence] = []
    if contract.gpu_model and contract.gpu_model.lower() not in gpu.name.lower():
        found.append(
            _found("gpu_model", f"GPU {index} is {gpu.name!r}, not {contract.gpu_model!r}")
        )
    if contract.usable_memory_gib is not None and gpu.memory_total_bytes is not None:
        usable = (gpu.memory_total_bytes - (gpu.mem_used_bytes or 0)) / GIB
        if usable < contract.usable_memory_gib:
            found.append(
                _found(
                    "usable_memory",
                    f"GPU {index}: {usable:.1f} GiB usable",
                    usable,
                    contract.usable_memory_gib,
                )
            )
    limit = contract.power_limit_w
    if limit is not None and gpu.power_limit_w is not None and gpu.power_limit_w < limit:
        found.append(
            _found(
                "power_limit",
                f"GPU {index}: power limit {gpu.power_limit_w:g} W",
                gpu.power_limit_w,
                limit,
            )
        )
    links = contract.nvlinks_up
    if links is not None and gpu.nvlink_active is not None and gpu.nvlink_active < links:
        found.append(
            _found(
                "nvlink",
                f"GPU {index}: {gpu.nvlink_active} NVLink links up",
                gpu.nvlink_active,
                links,
            )
        )
    return [_with_gpu(e, index, serial) for e in found]


def _driver(node: NodeSnapshot, contract: ContractSection) -> list[Evidence]:
    if node.driver is None or not (contract.driver_min or contract.driver_max):
        return []
    have = _version(node.driver)
    if contract.driver_min and have < _version(contract.driver_min):
        return [_found("driver", f"driver {node.driver} is older than {contract.driver_min}")]
    if contract.driver_max and have > _version(contract.driver_max):
        return [_found("driver", f"driver {node.driver} is newer than {contract.driver_max}")]
    return []


def _network(node: NodeSnapshot, contract: ContractSection) -> list[Evidence]:
    if contract.network_ports is None:
        return []
    rate = contract.network_rate_gbps
    up = [
        p
        for p in node.ports
        if (p.state or "").upper() == "ACTIVE" and (rate is None or (p.rate_gbps or 0.0) >= rate)
    ]
    if len(up) >= contract.network_ports:
        return []
    at_rate = f" at {rate:g} Gb/s" if rate is not None else ""
    return [
        _found(
            "network_ports",
            f"{len(up)} of {contract.network_ports} ports active{at_rate}",
            len(up),
            contract.network_ports,
        )
    ]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def _found(
    cause: str, message: str, measured: float | None = None, threshold: float | None = None
) -> Evidence:
    return Evidence("inventory", cause, message, measured=measured, threshold=threshold)


def _with_gpu(evidence: Evidence, gpu: int, serial: str | None) -> Evidence:
    return Evidence(
        evidence.stage,
        evidence.cause,
        evidence.message,
        evidence.measured,
        evidence.threshold,
        gpu=gpu,
        serial=serial,
    )
