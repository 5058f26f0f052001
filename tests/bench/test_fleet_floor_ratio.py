"""The bench's headline ratio: ours over the mean of the floors measured around it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_fleet.py"


def _bench_fleet() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_fleet_under_test", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench_fleet = _bench_fleet()


def _floor(cpu_s: float, *, nodes: int = 10, ingested: int = 300) -> object:
    # 30 s at 1 Hz over 10 nodes: 300 samples is every one of them.
    return bench_fleet.Window(
        cpu_s=cpu_s,
        wall_s=30.0,
        ingested=ingested,
        nodes_seen=nodes,
        received_bytes=ingested * 1700,
    )


def test_ours_is_divided_by_the_mean_of_the_floor_before_and_after() -> None:
    # Floors of 4 % and 6 % of a core (1.2 and 1.8 CPU-s in 30 s): mean 5 %; ours 10 %.
    figures = bench_fleet.floor_figures([_floor(1.2), _floor(1.8)], {"cpu_pct": 10.0}, 10)
    assert figures["floor_cpu_pct"] == 5.0
    assert figures["floor_cpu_pct_each"] == [4.0, 6.0]
    assert figures["ratio_to_floor"] == 2.0
    assert figures["ratio_to_floor_each"] == [2.5, 1.67]
    assert figures["bytes_per_message"] == 1700
    assert figures["floor_cpu_s_per_1000_msgs"] == 5.0  # 3.0 CPU-s over 600 samples


def test_a_floor_that_fell_behind_gives_its_reason_not_a_ratio() -> None:
    behind = _floor(1.8, ingested=150)
    figures = bench_fleet.floor_figures([_floor(1.2), behind], {"cpu_pct": 10.0}, 10)
    assert figures["ratio_to_floor"] == "took 150 of ~300 samples (saturated)"
    assert "ratio_to_floor_each" not in figures
