"""The dashboard's delivery document and panel text, from snapshots built by hand."""

from __future__ import annotations

from decimal import Decimal

from fleet.model import FleetSnapshot, GpuSnapshot, NodeSnapshot
from fleet.settings.contract_section import ContractSection
from ledger.delivery.now import EnergyToday, delivery_now
from tui.widgets.delivery_panel import delivery_markup

CONTRACT = ContractSection(
    gpus_per_node=2, power_limit_w=700, pcie_gen=5, usable_memory_gib=79,
    gpu_hour_price=Decimal("2.50"),
)  # fmt: skip
GIB = 1 << 30


def snap(t: float, energy: int, busy: float = 0.0, limit: float = 700.0) -> FleetSnapshot:
    gpus = (
        GpuSnapshot(index=0, uuid="a", name="H100", sm_active=busy, power_limit_w=limit,
                    pcie_gen=5, memory_total_bytes=80 * GIB, energy_mj=energy),
        GpuSnapshot(index=1, uuid="b", name="H100", sm_active=60.0, power_limit_w=700.0,
                    pcie_gen=4, memory_total_bytes=80 * GIB, foreign_mem_mib=5120,
                    energy_mj=energy),
    )  # fmt: skip
    node = NodeSnapshot(name="n[b]", status="streaming", state="up", gpus=gpus)
    return FleetSnapshot(taken_at=t, nodes=(node,))


def test_idle_cost_deviations_and_energy_today() -> None:
    today = EnergyToday()
    day = 1_800_000_000.0 - 1_800_000_000.0 % 86_400
    delivery_now(snap(day + 10, 1_000_000_000), CONTRACT, today)
    doc = delivery_now(snap(day + 3610, 1_000_000_000 + 1_800_000_000, limit=650), CONTRACT, today)
    # GPU 0 idle: 1 x 24 h x 2.50 = 60.00 a day. 2 GPUs x 1,800,000,000 mJ = 1 kWh.
    assert (doc["idle_gpus"], doc["idle_cost_per_day"]) == (1, "60.00")
    assert doc["energy_today_kwh"] == 1.0
    assert doc["deviations"] == [
        {"node": "n[b]", "gpu": 0, "what": ["power 650 W"]},
        {"node": "n[b]", "gpu": 1, "what": ["PCIe Gen4", "memory 75.0 GiB"]},
    ]
    text = delivery_markup(doc)
    assert "Idle now: 1 GPUs (60.00 USD/day)" in text
    assert "n\\[b] GPU 1: PCIe Gen4, memory 75.0 GiB" in text
