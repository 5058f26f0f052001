"""The delivery families on /metrics, parsed by prometheus_client's own parser."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from exporter.delivery_families import render_delivery
from history.reader import HistoryReader
from ledger.delivery.ledger import build_ledger, period_of
from tests.delivery.month import FEB, MAR, write_month
from tests.delivery.test_month import CONTRACT, ENERGY


def test_families_carry_the_hand_worked_month(tmp_path: Path) -> None:
    write_month(tmp_path)
    end = int(MAR.timestamp() * 1000)
    led = build_ledger(HistoryReader(tmp_path), period_of(int(FEB.timestamp() * 1000), end),
                       CONTRACT, ENERGY, end)  # fmt: skip
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(render_delivery(led))
        for s in family.samples
    }
    seconds = "gpufleet_delivery_gpu_seconds"  # base units: the hand-worked hours x 3,600
    assert samples[(seconds, (("class", "idle"),))] == 1072.0 * 3600
    assert samples[(seconds, (("class", "unmonitored"),))] == 96.0 * 3600
    assert samples[("gpufleet_delivery_idle_gpu_seconds", (("node", "n1"),))] == 648.0 * 3600
    deviation = ("gpufleet_delivery_deviation_gpu_seconds", (("kind", "power_limit"),))
    assert samples[deviation] == 3.0 * 3600
    joules = Decimal(str(samples[("gpufleet_delivery_gpu_energy_joules", ())]))
    assert joules == Decimal("777.6") * 3_600_000  # kWh x 3.6 MJ
    assert round(samples[("gpufleet_delivery_co2_grams", ())], 3) == 373_248.0
