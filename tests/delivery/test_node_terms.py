"""NVLink, GPU model and count, driver range and network ports judged on recorded minutes.

The frames are what history hands the ledger: ``gpu_minutes`` rows with the
``delivery_minutes`` columns joined, and ``port_minutes`` rows, here ten minutes of two
nodes with two GPUs and eight ports each, readings as a recorded H100 node gives them
(``NVIDIA H100 80GB HBM3``, driver ``570.124.06``, 18 NVLink links, 400 Gb/s NDR ports).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import polars as pl

from fleet.settings.contract_section import ContractSection
from ledger.delivery.conformance import Deviation, find_deviations
from ledger.delivery.ledger import PORT_SCHEMA
from ledger.delivery.node_terms import driver_allowed

T0 = datetime(2026, 3, 2, 8, tzinfo=UTC)
T0_MS = int(T0.timestamp() * 1000)
MINUTES = 10
H100 = "NVIDIA H100 80GB HBM3"
CONTRACT = ContractSection(
    gpu_model="H100 80GB", gpus_per_node=2, nvlinks_up=18, network_ports=8,
    network_rate_gbps=400, driver_min="550.54", driver_max="570.999",
    deviation_credits={"driver": Decimal("1.00"), "network_rate": Decimal("0.60")},
)  # fmt: skip


def minute(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


def gpu_rows(**changes: Any) -> pl.DataFrame:
    """Every GPU-minute healthy; ``changes`` maps (node, gpu, minute) to replaced columns,
    or to None for a GPU that did not report that minute."""
    rows = []
    for i in range(MINUTES):
        for node in ("n1", "n2"):
            for gpu in (0, 1):
                row: dict[str, Any] = {
                    "ts": minute(i), "node": node, "gpu": gpu, "gpu_name": H100,
                    "nvlink_up": 18, "driver": "570.124.06", "ports_active": 8,
                }  # fmt: skip
                change = changes.get(f"{node}_{gpu}_{i}", {})
                if change is None:
                    continue
                rows.append({**row, **change})
    return pl.DataFrame(rows).with_columns(pl.col("ts").dt.cast_time_unit("ms"))


def port_rows(changes: dict[tuple[str, int, int], dict[str, Any]] | None = None) -> pl.DataFrame:
    rows = []
    for i in range(MINUTES):
        for node in ("n1", "n2"):
            for port in range(8):
                row = {"ts": minute(i), "node": node, "port": f"mlx5_{port}/1", "kind": "ib",
                       "state": "ACTIVE", "rate_gbps": 400.0}  # fmt: skip
                rows.append({**row, **(changes or {}).get((node, port, i), {})})
    return pl.DataFrame(rows, schema=PORT_SCHEMA)


def judged(frame: pl.DataFrame, ports: pl.DataFrame | None = None) -> list[tuple[Any, ...]]:
    found = find_deviations(
        frame, port_rows() if ports is None else ports, CONTRACT, T0_MS, T0_MS + MINUTES * 60_000
    )
    return [_row(d) for d in found]


def _row(d: Deviation) -> tuple[Any, ...]:
    start, end = ((x - T0_MS) // 60_000 for x in (d.start_ms, d.end_ms))
    return (d.node, d.gpu, d.port, d.kind, start, end, d.measured, d.contracted, d.gpus,
            d.credit)  # fmt: skip


def test_a_fleet_as_contracted_has_no_deviation() -> None:
    assert judged(gpu_rows()) == []


def test_nvlink_links_down_are_an_interval_of_that_gpu() -> None:
    changes = {f"n1_1_{i}": {"nvlink_up": 17} for i in (3, 4, 5)}
    assert judged(gpu_rows(**changes)) == [
        ("n1", 1, None, "nvlink_up", 3, 6, 17.0, 18.0, 1, None),
    ]


def test_a_gpu_of_another_model_is_its_whole_time() -> None:
    changes = {f"n2_0_{i}": {"gpu_name": "NVIDIA A100-SXM4-80GB"} for i in range(MINUTES)}
    assert judged(gpu_rows(**changes)) == [
        ("n2", 0, None, "gpu_model", 0, 10, "NVIDIA A100-SXM4-80GB", "H100 80GB", 1, None),
    ]


def test_a_missing_gpu_counts_its_own_gpu_hours() -> None:
    changes: dict[str, Any] = {f"n2_1_{i}": None for i in (2, 3, 4)}
    assert judged(gpu_rows(**changes)) == [
        ("n2", None, None, "gpu_count", 2, 5, 1.0, 2.0, 1, None),
    ]


def test_a_driver_outside_the_range_takes_every_gpu_of_the_node_and_is_priced() -> None:
    changes = {f"n1_{g}_{i}": {"driver": "535.104.05"} for g in (0, 1) for i in range(4)}
    # 4 minutes x 2 GPUs = 8 GPU-minutes x 1.00 / 60 = 0.1333...
    found = judged(gpu_rows(**changes))
    assert [f[:9] for f in found] == [
        ("n1", None, None, "driver", 0, 4, "535.104.05", "550.54..570.999", 2),
    ]
    assert found[0][9] == Decimal(8) / Decimal(60)


def test_a_port_down_is_its_share_of_the_node_and_a_slow_port_its_own_interval() -> None:
    changes = {f"n2_{g}_{i}": {"ports_active": 7} for g in (0, 1) for i in (6, 7)}
    slow = {("n1", 3, i): {"rate_gbps": 200.0} for i in range(3)}
    # A port that is down is counted by network_ports, not judged for its rate.
    down = {("n2", 5, i): {"state": "DOWN", "rate_gbps": 100.0} for i in (6, 7)}
    found = judged(gpu_rows(**changes), port_rows({**slow, **down}))
    # 2 GPUs / 8 ports = 0.25 GPUs a port; 3 minutes x 0.25 x 0.60 / 60 = 0.0075.
    assert found == [
        ("n1", None, "mlx5_3/1", "network_rate", 0, 3, 200.0, 400.0, Decimal("0.25"),
         Decimal("0.0075")),
        ("n2", None, None, "network_ports", 6, 8, 7.0, 8.0, Decimal("0.25"), None),
    ]  # fmt: skip


def test_missing_readings_are_no_deviation() -> None:
    changes = {
        f"n1_0_{i}": {"gpu_name": None, "nvlink_up": None, "driver": None, "ports_active": None}
        for i in range(MINUTES)
    }
    assert judged(gpu_rows(**changes), port_rows().clear()) == []


def test_a_change_of_measured_value_starts_a_new_interval() -> None:
    changes = {f"n1_0_{i}": {"nvlink_up": 17 if i < 2 else 16} for i in range(4)}
    assert [f[4:7] for f in judged(gpu_rows(**changes))] == [(0, 2, 17.0), (2, 4, 16.0)]


def test_driver_versions_compare_part_by_part_as_the_campaign_compares_them() -> None:
    assert driver_allowed("570.124.06", CONTRACT) is True
    assert driver_allowed("550.54", CONTRACT) is True
    assert driver_allowed("550.53.99", CONTRACT) is False
    assert driver_allowed("571.0", CONTRACT) is False
    assert driver_allowed("not a version; rm -rf /", CONTRACT) is None
    only_max = ContractSection(driver_max="570")
    assert driver_allowed("570.124.06", only_max) is False  # newer than 570 itself
