"""A month of history with its answer worked by hand (the story is in month.py).

February 2026: 28 days = 672 h; 2 nodes x 2 GPUs = 2,688 paid GPU-hours at 2.50 USD.
- unmonitored: 10 Feb, 24 h x 4 GPUs = 96
- broken: n2 on 20 Feb 00:00-12:00, 12 h x 2 GPUs = 24
- observed: n1 672 - 24 = 648 h per GPU; n2 648 - 12 = 636 h per GPU
- n1 gpu0 working 648; n1 gpu1 idle 648
- n2 gpu0: 20 of every 60 minutes provider = 636 / 3 = 212; the other 40-minute runs are
  idle (>= 10 minutes): 424
- n2 gpu1: working 636 (its 5-minute pauses are shorter than 10 minutes)
- working 1,284, idle 1,072, provider 212, broken 24, unmonitored 96: sum 2,688
- idle cost 1,072 x 2.50 = 2,680.00; paid 2,688 x 2.50 = 6,720.00

Energy: 648 h x 60 = 38,880 recorded minutes per GPU, 155,520 in all, each 300 W x 60 s
(the counter's rise, or power at the month's first minute, after the gap and at the
reset: 3 minutes per GPU, plus n1 gpu0's reset = 9 minutes integrated from power... see
below): 155,520 x 0.3 kW / 60 = 777.6 kWh; x PUE 1.2 = 933.12 kWh; x 400 g = 373.248 kg.
Minutes from power: each GPU's first minute (1 Feb 00:00) and first after the gap
(11 Feb 00:00) = 8, plus n1 gpu0's reset minute = 9.

TF32: n1 gpu0 400 (measured), n1 gpu1 410 (median of 400 and 420), n2 494 (datasheet).
TFLOPS-hours: working 648x400 + 636x494 = 259,200 + 314,184 = 573,384;
idle 648x410 + 424x494 = 265,680 + 209,456 = 475,136; provider 212x494 = 104,728;
broken 2 x 12 x 494 = 11,856; unmonitored 24 x (400 + 410 + 494 + 494) = 43,152;
paid 1,208,256. Cost per 1,000 TFLOPS-hour: paid 6,720,000 / 1,208,256 = 5.5617… = 5.56;
working 6,720,000 / 573,384 = 11.7199… = 11.72; gCO2 per working TFLOPS-hour
373,248 / 573,384 = 0.65096… = 0.651. Datasheet GPU-hours: n2's 2 x 672 = 1,344.

Energy and CO2 by class: every recorded GPU-minute is 0.3 kW x 1/60 h = 0.005 kWh
(from the counter or, at the 9 minutes above, from power: the same 300 W), so a class's
GPU energy is its recorded GPU-hours x 0.3 kWh. The gap day has no recorded minutes:
unmonitored 0 kWh. n2's broken half-day was recorded: 2 GPUs x 12 h = 24 GPU-h broken.
- working: n1 gpu0 648 h + n2 gpu1 636 h = 1,284 h x 0.3 = 385.2 kWh
- idle: n1 gpu1 648 h + n2 gpu0 424 h = 1,072 h x 0.3 = 321.6 kWh
- provider: 212 h x 0.3 = 63.6 kWh; broken: 24 h x 0.3 = 7.2 kWh; unmonitored 0
- sum 385.2 + 321.6 + 63.6 + 7.2 = 777.6 kWh, the fleet's; x 1.2 facility: 462.240,
  385.920, 76.320, 8.640, 0 (sum 933.120); x 400 g: 184.896, 154.368, 30.528, 3.456,
  0 kg CO2 (sum 373.248).
gCO2 per TFLOPS-hour of each class (its CO2 / its TFLOPS-hours above): working
184,896 / 573,384 = 0.32246… = 0.322; idle 154,368 / 475,136 = 0.32489… = 0.325;
provider 30,528 / 104,728 = 0.29149… = 0.291; broken 3,456 / 11,856 = 0.291;
unmonitored 0 / 43,152 = 0.000.

Deviations: n1 gpu1 power 650 of 700 W, 5 Feb 10:00-13:00, 3 GPU-h x 1.00 = 3.00;
n2 gpu0 PCIe Gen 4 of 5, 3 Feb 00:00-02:00, 2 GPU-h, unpriced; n1 gpu0 usable 75 of 79
GiB, 7 Feb 06:00-07:30, 1.5 GPU-h, unpriced.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from fleet.settings.contract_section import ContractSection
from history.reader import HistoryReader
from ledger.delivery.ledger import DeliveryLedger, build_ledger, period_of
from ledger.delivery.section import EnergySection
from ledger.delivery.summary import delivery_json
from tests.delivery.month import FEB, MAR, write_month

CONTRACT = ContractSection(
    gpu_model="NVIDIA H100 80GB HBM3",
    gpus_per_node=2,
    usable_memory_gib=79,
    power_limit_w=700,
    pcie_gen=5,
    pcie_width=16,
    gpu_hour_price=Decimal("2.50"),
    deviation_credits={"power_limit": Decimal("1.00")},
)
ENERGY = EnergySection(pue=1.2, grid_intensity_g_per_kwh=400)
END_MS = int(MAR.timestamp() * 1000)


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> DeliveryLedger:
    data_dir: Path = tmp_path_factory.mktemp("history")
    write_month(data_dir)
    period = period_of(int(FEB.timestamp() * 1000), END_MS)
    return build_ledger(HistoryReader(data_dir), period, CONTRACT, ENERGY, END_MS + 86_400_000)


@pytest.fixture(scope="module")
def month(ledger: DeliveryLedger) -> dict:
    return delivery_json(ledger)


def test_every_class_has_its_hand_worked_gpu_hours(month: dict) -> None:
    hours = {c: v["gpu_hours"] for c, v in month["classes"].items()}
    assert hours == {
        "working": "1284.000",
        "idle": "1072.000",
        "provider": "212.000",
        "broken": "24.000",
        "unmonitored": "96.000",
    }
    assert month["paid_gpu_hours"] == "2688.000"
    assert month["delivered_healthy_gpu_hours"] == "2568.000"


def test_idle_costs_what_the_contract_price_says(month: dict) -> None:
    assert month["classes"]["idle"]["cost"] == "2680.00"
    assert month["paid_cost"] == "6720.00"
    assert [row["node"] for row in month["most_idle"]] == ["n1", "n2"]
    assert month["most_idle"][0]["idle_cost"] == "1620.00"


def test_energy_from_the_counter_with_the_reset_not_double_counted(month: dict) -> None:
    energy = month["energy"]
    assert energy["gpu_kwh"] == "777.600"
    assert energy["facility_kwh"] == "933.120"
    assert energy["co2_kg"] == "373.248"
    assert energy["minutes_from_power"] == 9
    assert energy["minutes_from_counter"] == 155_520 - 9


def test_energy_and_co2_split_by_class_sum_to_the_fleet(month: dict) -> None:
    split = month["energy"]["by_class"]
    assert split == {
        "working": {"gpu_kwh": "385.200", "facility_kwh": "462.240", "co2_kg": "184.896"},
        "idle": {"gpu_kwh": "321.600", "facility_kwh": "385.920", "co2_kg": "154.368"},
        "provider": {"gpu_kwh": "63.600", "facility_kwh": "76.320", "co2_kg": "30.528"},
        "broken": {"gpu_kwh": "7.200", "facility_kwh": "8.640", "co2_kg": "3.456"},
        "unmonitored": {"gpu_kwh": "0.000", "facility_kwh": "0.000", "co2_kg": "0.000"},
    }
    for key, total in (("gpu_kwh", "777.600"), ("facility_kwh", "933.120"), ("co2_kg", "373.248")):
        assert sum(Decimal(v[key]) for v in split.values()) == Decimal(total)
        assert month["energy"][key] == total


def test_the_exact_split_sums_to_the_exact_total(ledger: DeliveryLedger) -> None:
    # Unrounded: millijoules and grams, each class's share of each minute counted once.
    assert sum(ledger.class_energy.mj.values()) == ledger.energy.fleet_mj
    assert ledger.energy.fleet_mj == 155_520 * 18_000_000
    assert ledger.carbon is not None
    grams = ledger.carbon.class_grams
    assert sum(grams.values(), Decimal(0)) == ledger.carbon.grams == Decimal(373_248)
    assert grams["working"] == Decimal(184_896) and grams["unmonitored"] == 0


def test_co2_per_tflops_hour_of_each_class(month: dict) -> None:
    assert month["throughput"]["g_co2_per_tflops_hour"] == {
        "working": "0.322",
        "idle": "0.325",
        "provider": "0.291",
        "broken": "0.291",
        "unmonitored": "0.000",
    }


def test_cost_per_delivered_tflop_hour_to_the_cent(month: dict) -> None:
    throughput = month["throughput"]
    assert throughput["tflops_hours"] == {
        "working": "573384.000",
        "idle": "475136.000",
        "provider": "104728.000",
        "broken": "11856.000",
        "unmonitored": "43152.000",
    }
    assert throughput["cost_per_1000_tflops_hour_paid"] == "5.56"
    assert throughput["cost_per_1000_tflops_hour_working"] == "11.72"
    assert throughput["g_co2_per_tflops_hour_working"] == "0.651"
    assert throughput["datasheet_gpu_hours"] == "1344.000"


def test_each_deviation_is_its_interval_with_measured_contracted_and_money(month: dict) -> None:
    found = [
        (d["node"], d["gpu"], d["kind"], d["start"], d["end"], d["gpu_hours"],
         d["measured"], d["contracted"], d["credit"])
        for d in month["deviations"]
    ]  # fmt: skip
    assert found == [
        ("n1", 0, "usable_memory", "2026-02-07T06:00:00Z", "2026-02-07T07:30:00Z", "1.500",
         75.0, 79.0, None),
        ("n1", 1, "power_limit", "2026-02-05T10:00:00Z", "2026-02-05T13:00:00Z", "3.000",
         650.0, 700.0, "3.00"),
        ("n2", 0, "pcie_gen", "2026-02-03T00:00:00Z", "2026-02-03T02:00:00Z", "2.000",
         4.0, 5.0, None),
    ]  # fmt: skip
    assert month["deviation_credit"] == "3.00"
