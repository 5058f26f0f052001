"""The repairs ledger on its surfaces: /metrics families, the event-log line, the bundle."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.repair_families import render_repairs
from ledger.repairs.bundle import bundle_repairs
from ledger.repairs.ledger import RepairsLedger, compute
from ledger.repairs.log_line import repair_line
from tests.repairs import scenario
from tests.repairs.scenario import T0, ms

END = T0 + timedelta(hours=scenario.END_H)


@pytest.fixture
def led(tmp_path: Path) -> RepairsLedger:
    scenario.write(tmp_path)
    return compute(tmp_path, T0, END, None)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_parse_and_hold_the_hand_counted_figures(led: RepairsLedger) -> None:
    samples = _samples(render_repairs(led))
    assert samples[("gpufleet_repair_failures", (("class", "gpu_xid"),))] == 2
    assert samples[("gpufleet_repair_failures", (("class", "nvlink"),))] == 0
    # gpu_swap repairs: gpu-d 1 h and gpu-a 4 h.
    assert samples[("gpufleet_repair_time_seconds", (("kind", "gpu_swap"),))] == 5 * 3600
    assert samples[("gpufleet_repairs_completed", (("kind", "gpu_swap"),))] == 2
    assert samples[("gpufleet_node_mtbf_seconds", (("node", "gpu-b"),))] == 24 * 3600
    assert samples[("gpufleet_repair_breaches", ())] == 0


def test_a_repair_is_one_event_log_line(led: RepairsLedger) -> None:
    swap = next(r for r in led.records if r.node == "gpu-a")
    assert repair_line(swap) == (
        "gpu-a GPU 3: gpu_xid, acked +30 min (T-1), gpu_swap +3.9 h, healthy +4.0 h"
    )
    replaced = next(r for r in led.records if r.node == "gpu-c")
    assert repair_line(replaced) == (
        "gpu-c: unreachable, acked +60 min (no ticket), node_replaced +9.5 h, healthy +10.0 h"
    )


def test_each_bundle_outage_gets_its_repair(tmp_path: Path) -> None:
    scenario.write(tmp_path)
    rows = bundle_repairs(
        tmp_path,
        T0,
        END,
        None,
        [("gpu-a", ms(10), ms(12)), ("gpu-a", ms(12.1), ms(14)), ("gpu-a", ms(20), ms(21))],
    )
    first, second, none = rows
    assert first is not None and second is not None
    assert first == second  # one repair across the controller's restart
    assert first["kind"] == "gpu_swap" and first["ticket"] == "T-1"
    assert none is None


def test_bundle_evidence_file_from_the_claims_outage_rows(tmp_path: Path) -> None:
    import json

    from ledger.repairs.bundle import repairs_evidence

    scenario.write(tmp_path)
    outage = {"node": "gpu-c", "start": "2026-11-02T20:00:00Z", "end": "2026-11-03T06:00:00Z"}
    (row,) = json.loads(repairs_evidence(tmp_path, ms(0), ms(48), [outage]))
    assert row["repair"]["kind"] == "node_replaced"
    assert row["repair"]["time_to_repair_s"] == 10 * 3600
